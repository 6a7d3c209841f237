// Polls the release until the worker has published it or it failed, moving the progress bar.
(function () {
  "use strict";
  var card = document.getElementById("release-status");
  if (!card || ["awaiting_approval", "queued", "running"].indexOf(card.dataset.status) < 0) { return; }
  var initial = card.dataset.status;
  // A decision may take days: ask less often meanwhile.
  var interval = initial === "awaiting_approval" ? 10000 : 1000;
  var bar = document.getElementById("progress");
  var statusText = document.getElementById("status-text");
  var detail = document.getElementById("status-detail");
  // Each status's label, in the page's language: data-label-<status> attributes of the card.
  function label(status) { return card.getAttribute("data-label-" + status.replace(/_/g, "-")); }

  function poll() {
    fetch(card.dataset.apiUrl, { headers: { "Accept": "application/json" }, credentials: "same-origin" })
      .then(function (response) { return response.json(); })
      .then(function (release) {
        bar.value = release.progress;
        statusText.textContent = label(release.status) || release.status;
        var finished = ["published", "failed", "rejected"].indexOf(release.status) >= 0;
        if (finished || (initial === "awaiting_approval" && release.status !== initial)) {
          window.location.reload();
          return;
        }
        setTimeout(poll, interval);
      })
      .catch(function () { setTimeout(poll, 3000); });
  }
  setTimeout(poll, 500);
}());

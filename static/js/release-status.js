// Polls the release until the worker has published it or it failed, moving the progress bar.
(function () {
  "use strict";
  var card = document.getElementById("release-status");
  if (!card || ["queued", "running"].indexOf(card.dataset.status) < 0) { return; }
  var bar = document.getElementById("progress");
  var statusText = document.getElementById("status-text");
  var detail = document.getElementById("status-detail");
  var labels = { queued: "Queued", running: "Running", published: "Published", failed: "Failed" };

  function poll() {
    fetch(card.dataset.apiUrl, { headers: { "Accept": "application/json" }, credentials: "same-origin" })
      .then(function (response) { return response.json(); })
      .then(function (release) {
        bar.value = release.progress;
        statusText.textContent = labels[release.status] || release.status;
        if (release.status === "published" || release.status === "failed") {
          window.location.reload();
          return;
        }
        setTimeout(poll, 1000);
      })
      .catch(function () { setTimeout(poll, 3000); });
  }
  setTimeout(poll, 500);
}());

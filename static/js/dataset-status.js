// While an upload converts, asks the API every second how far it is and moves the bar, instead of
// reloading the whole page (the <noscript> refresh does that without JavaScript). Once the table
// is ready, or failed, the page reloads: the server then shows the columns, or the reason.
(function () {
  "use strict";
  var card = document.getElementById("dataset-status");
  if (!card || card.dataset.status !== "processing" || !window.fetch) { return; }
  var bar = document.getElementById("conversion-progress");
  var percent = document.getElementById("conversion-percent");
  var failures = 0;

  function poll() {
    fetch(card.dataset.apiUrl, { headers: { "Accept": "application/json" }, credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.json();
      })
      .then(function (dataset) {
        failures = 0;
        if (dataset.status !== "processing") {
          window.location.reload();
          return;
        }
        bar.value = dataset.progress;
        bar.textContent = dataset.progress;
        percent.textContent = Math.round(dataset.progress * 100) + "%";
        setTimeout(poll, 1000);
      })
      .catch(function () {
        // After a few failed polls, a full reload shows what the server says (or its error page).
        failures += 1;
        if (failures >= 3) { window.location.reload(); } else { setTimeout(poll, 2000); }
      });
  }
  setTimeout(poll, 1000);
}());

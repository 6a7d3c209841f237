// Adds statistic rows and shows each one's share of ε as weights change (ε · weight / Σ weights).
(function () {
  "use strict";
  var form = document.getElementById("statistics-form");
  if (!form) { return; }
  var epsilon = parseFloat(form.dataset.epsilon);
  var body = document.querySelector("#statistics tbody");
  var template = document.getElementById("statistic-template");
  var total = form.querySelector("input[name$='-TOTAL_FORMS']");

  function liveRows() {
    return Array.prototype.filter.call(body.querySelectorAll("tr.statistic-row"), function (row) {
      var remove = row.querySelector("input[type=checkbox][name$='-DELETE']");
      return !(remove && remove.checked);
    });
  }

  function updateShares() {
    var rows = liveRows();
    var weights = rows.map(function (row) {
      var value = parseFloat(row.querySelector("input[name$='-weight']").value);
      return value > 0 ? value : 0;
    });
    var sum = weights.reduce(function (a, b) { return a + b; }, 0);
    Array.prototype.forEach.call(body.querySelectorAll("tr.statistic-row"), function (row) {
      row.querySelector(".share").textContent = "—";
    });
    rows.forEach(function (row, i) {
      row.querySelector(".share").textContent = sum > 0 ? (epsilon * weights[i] / sum).toFixed(4) : "—";
    });
  }

  document.getElementById("add-statistic").addEventListener("click", function () {
    var index = parseInt(total.value, 10);
    var html = template.innerHTML.replace(/__prefix__/g, String(index));
    body.insertAdjacentHTML("beforeend", html);
    total.value = String(index + 1);
    var weight = body.lastElementChild.querySelector("input[name$='-weight']");
    if (!weight.value) { weight.value = "1"; }
    updateShares();
  });
  form.addEventListener("input", updateShares);
  form.addEventListener("change", updateShares);
  updateShares();
}());

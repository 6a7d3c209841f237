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

// Accuracy first: asks the engine (through the API) which ε a statistic needs for the error the
// curator types, and what release ε the current weights would then require.
(function () {
  "use strict";
  var form = document.getElementById("statistics-form");
  if (!form || !form.dataset.accuracyUrl) { return; }
  var csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  var definition = JSON.parse(form.dataset.definition);
  var numericSource = document.getElementById("numeric-columns");
  var numeric = numericSource ? JSON.parse(numericSource.textContent) : [];

  function rowQuery(row) {
    var kind = row.querySelector("select[name$='-kind']").value;
    var query = { kind: kind };
    var column = row.querySelector("select[name$='-column']").value;
    var bins = row.querySelector("input[name$='-bins']").value;
    if (kind === "marginal") {
      query.columns = [column, row.querySelector("select[name$='-second_column']").value];
      if (bins.trim()) {
        // The edges cut whichever of the two columns is numeric (as the form does).
        query.bins = {};
        query.columns.forEach(function (name) {
          if (numeric.indexOf(name) >= 0) {
            query.bins[name] = bins.split(",").map(function (b) { return parseFloat(b); });
          }
        });
      }
    } else if (kind !== "count" && column) { query.column = column; }
    if (kind === "histogram" && bins.trim()) {
      query.bins = bins.split(",").map(function (b) { return parseFloat(b); });
    }
    if (kind === "range_histogram") {
      var count = bins.trim();
      query.bins = /^[0-9]+$/.test(count) ? parseInt(count, 10) : (count || 100);
    }
    if (kind === "quantile") {
      var quantiles = row.querySelector("input[name$='-quantiles']").value;
      query.quantiles = (quantiles.trim() || "0.5").split(",").map(function (q) { return parseFloat(q); });
    }
    return query;
  }

  function weights() {
    return Array.prototype.map.call(form.querySelectorAll("tr.statistic-row"), function (row) {
      var remove = row.querySelector("input[type=checkbox][name$='-DELETE']");
      var value = parseFloat(row.querySelector("input[name$='-weight']").value);
      return remove && remove.checked ? 0 : (value > 0 ? value : 0);
    });
  }

  form.addEventListener("change", function (event) {
    if (!event.target.classList.contains("target")) { return; }
    var row = event.target.closest("tr");
    var out = row.querySelector(".needed");
    var target = parseFloat(event.target.value);
    if (!(target > 0)) { out.textContent = ""; return; }
    out.textContent = "…";
    fetch(form.dataset.accuracyUrl, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf, "Accept": "application/json" },
      body: JSON.stringify({ definition: definition, query: rowQuery(row), ci95_halfwidth: target })
    }).then(function (response) {
      return response.json().then(function (body) { return { ok: response.ok, body: body }; });
    }).then(function (result) {
      if (!result.ok) {
        var errors = result.body.errors || {};
        out.textContent = Object.keys(errors).map(function (k) { return errors[k].join(" "); }).join(" ") ||
          result.body.detail;
        return;
      }
      var needed = result.body.epsilon;
      var rows = Array.prototype.slice.call(form.querySelectorAll("tr.statistic-row"));
      var all = weights();
      var total = all.reduce(function (a, b) { return a + b; }, 0);
      var mine = all[rows.indexOf(row)];
      var release = mine > 0 ? needed * total / mine : needed;
      out.textContent = needed === 0 ? "exact at no cost" :
        "needs ε = " + needed.toPrecision(3) + " alone; release ε = " + release.toPrecision(3) + " with these weights";
    });
  });
}());

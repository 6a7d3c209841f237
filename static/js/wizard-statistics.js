// Adds statistic rows and shows each one's share of ε as weights change (ε · weight / Σ weights).
(function () {
  "use strict";
  var form = document.getElementById("statistics-form");
  if (!form) { return; }
  // Words come from the page, in its language: data-* attributes of the form, with {names}.
  function phrase(name, values) {
    return (form.getAttribute("data-" + name) || "").replace(/\{(\w+)\}/g, function (whole, key) {
      return Object.prototype.hasOwnProperty.call(values || {}, key) ? values[key] : whole;
    });
  }
  var epsilon = parseFloat(form.dataset.epsilon);
  var body = document.querySelector("#statistics tbody");
  var template = document.getElementById("statistic-template");
  var total = form.querySelector("input[name$='-TOTAL_FORMS']");
  var numericSource = document.getElementById("numeric-columns");
  var numeric = numericSource ? JSON.parse(numericSource.textContent) : [];

  // Shows a row's fields for its kind: [data-show-kinds] only for the kinds listed,
  // [data-hide-kinds] for all but those, [data-numeric-second-column] only when the second
  // column is numeric.
  function showFields(row) {
    var kind = row.querySelector("select[name$='-kind']").value;
    var second = row.querySelector("select[name$='-second_column']").value;
    Array.prototype.forEach.call(row.querySelectorAll("[data-show-kinds], [data-hide-kinds]"), function (part) {
      var shown = part.dataset.showKinds ? part.dataset.showKinds.split(" ").indexOf(kind) >= 0 : true;
      if (part.dataset.hideKinds && part.dataset.hideKinds.split(" ").indexOf(kind) >= 0) { shown = false; }
      if (part.hasAttribute("data-numeric-second-column") && numeric.indexOf(second) < 0) { shown = false; }
      part.hidden = !shown;
    });
  }

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
    // Statistics on disjoint groups share ε in parallel: the engine splits it on saving, and
    // the preview shows each share.
    var grouped = rows.some(function (row) {
      var groups = row.querySelector("select[name$='-groups']");
      return groups && groups.selectedOptions.length > 0;
    });
    if (grouped) {
      rows.forEach(function (row) {
        row.querySelector(".share").textContent = phrase("groups-share");
      });
      return;
    }
    rows.forEach(function (row, i) {
      row.querySelector(".share").textContent = sum > 0 ? String(Number((epsilon * weights[i] / sum).toPrecision(4))) : "—";
    });
  }

  function addRow() {
    var index = parseInt(total.value, 10);
    var html = template.innerHTML.replace(/__prefix__/g, String(index));
    body.insertAdjacentHTML("beforeend", html);
    total.value = String(index + 1);
    var row = body.lastElementChild;
    var weight = row.querySelector("input[name$='-weight']");
    if (!weight.value) { weight.value = "1"; }
    showFields(row);
    updateShares();
    return row;
  }

  // One-click suggestions ("+ Histogram of region"): without this script each is a submit
  // button that adds its row on the server; here it adds the row in the page, and is hidden
  // while a row of the whole table already has its statistic and column.
  var suggestions = Array.prototype.slice.call(form.querySelectorAll("button.quick-add"));
  var suggestionsBox = document.getElementById("quick-adds");
  var status = document.getElementById("quick-add-status");

  function refreshSuggestions() {
    var chosen = liveRows().filter(function (row) {
      var groups = row.querySelector("select[name$='-groups']");
      return !(groups && groups.selectedOptions.length > 0);
    }).map(function (row) {
      return row.querySelector("select[name$='-kind']").value + ":" +
        row.querySelector("select[name$='-column']").value;
    });
    suggestions.forEach(function (button) {
      button.hidden = chosen.indexOf(button.dataset.kind + ":" + button.dataset.column) >= 0;
    });
    if (suggestionsBox) {
      suggestionsBox.hidden = suggestions.every(function (button) { return button.hidden; });
    }
  }

  suggestions.forEach(function (button) {
    button.type = "button";
    button.addEventListener("click", function () {
      var row = addRow();
      row.querySelector("select[name$='-kind']").value = button.dataset.kind;
      row.querySelector("select[name$='-column']").value = button.dataset.column;
      showFields(row);
      updateShares();
      refreshSuggestions();
      if (status) {
        status.textContent = phrase("added", {
          statistic: button.textContent.replace(/^\+\s*/, ""),
          number: String(liveRows().length)
        });
      }
      // The clicked button is now hidden: the focus moves on to the next suggestion, or to
      // the button that saves.
      var next = suggestions.filter(function (other) { return !other.hidden; })[0] ||
        document.getElementById("save-statistics");
      if (next) { next.focus(); }
    });
  });

  document.getElementById("add-statistic").addEventListener("click", addRow);
  form.addEventListener("input", updateShares);
  form.addEventListener("change", updateShares);
  form.addEventListener("change", function (event) {
    var row = event.target.closest("tr.statistic-row");
    if (row) { showFields(row); }
    refreshSuggestions();
  });
  Array.prototype.forEach.call(body.querySelectorAll("tr.statistic-row"), showFields);
  updateShares();
  refreshSuggestions();
}());

// Accuracy first: asks the engine (through the API) which ε a statistic needs for the error the
// curator types, and what release ε the current weights would then require.
(function () {
  "use strict";
  var form = document.getElementById("statistics-form");
  if (!form || !form.dataset.accuracyUrl) { return; }
  // Words come from the page, in its language: data-* attributes of the form, with {names}.
  function phrase(name, values) {
    return (form.getAttribute("data-" + name) || "").replace(/\{(\w+)\}/g, function (whole, key) {
      return Object.prototype.hasOwnProperty.call(values || {}, key) ? values[key] : whole;
    });
  }
  var csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  var definition = JSON.parse(form.dataset.definition);
  var numericSource = document.getElementById("numeric-columns");
  var numeric = numericSource ? JSON.parse(numericSource.textContent) : [];

  function edges(text) {
    return text.split(",").filter(function (b) { return b.trim(); }).map(function (b) { return parseFloat(b); });
  }

  function whole(text) {
    return /^[0-9]+$/.test(text.trim()) ? parseInt(text, 10) : text;
  }

  function rowQuery(row) {
    var kind = row.querySelector("select[name$='-kind']").value;
    var query = { kind: kind };
    var column = row.querySelector("select[name$='-column']").value;
    var bins = row.querySelector("input[name$='-bins']").value;
    if (kind === "marginal") {
      var second = row.querySelector("select[name$='-second_column']").value;
      var secondBins = row.querySelector("input[name$='-second_bins']").value;
      query.columns = [column, second];
      // Each numeric column's edges from its own field (as the form does): with one numeric
      // column, the bins cut it (or the edges across, if given, cut a numeric second column).
      var texts = {};
      if (numeric.indexOf(column) >= 0 && numeric.indexOf(second) >= 0) {
        texts[column] = bins;
        texts[second] = secondBins;
      } else if (numeric.indexOf(second) >= 0) {
        texts[second] = secondBins.trim() ? secondBins : bins;
      } else if (numeric.indexOf(column) >= 0) {
        texts[column] = bins;
      }
      Object.keys(texts).forEach(function (name) {
        if (texts[name].trim()) {
          query.bins = query.bins || {};
          query.bins[name] = edges(texts[name]);
        }
      });
    } else if (kind === "kmeans") {
      query.columns = Array.prototype.map.call(
        row.querySelectorAll("input[type=checkbox][name$='-columns']:checked"),
        function (box) { return box.value; });
      query.k = whole(row.querySelector("input[name$='-k']").value);
      var iterations = row.querySelector("input[name$='-iterations']").value;
      if (iterations.trim()) { query.iterations = whole(iterations); }
    } else if (kind === "synthetic") {
      query.columns = Array.prototype.map.call(
        row.querySelectorAll("input[type=checkbox][name$='-table_columns']:checked"),
        function (box) { return box.value; });
      // Each numeric column's own edges, typed as "age: 0, 18, 65, 100; income: 0, 1000".
      bins.split(";").forEach(function (part) {
        var at = part.lastIndexOf(":");
        if (at > 0 && part.slice(0, at).trim()) {
          query.bins = query.bins || {};
          query.bins[part.slice(0, at).trim()] = edges(part.slice(at + 1));
        }
      });
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
      out.textContent = needed === 0 ? phrase("exact") : phrase("needs", {
        needed: String(Number(needed.toPrecision(3))),
        release: String(Number(release.toPrecision(3)))
      });
    });
  });
}());

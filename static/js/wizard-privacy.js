// Keeps ε and p in step, and shows the odds bound and the budget left, as the curator types.
// All numbers come from the server's translation endpoint (the engine), not from this script.
(function () {
  "use strict";
  var form = document.getElementById("privacy-form");
  if (!form) { return; }
  // Sentences come from the page, in its language: data-* attributes of the form, with {names}.
  function phrase(name, values) {
    return (form.getAttribute("data-" + name) || "").replace(/\{(\w+)\}/g, function (whole, key) {
      return Object.prototype.hasOwnProperty.call(values || {}, key) ? values[key] : whole;
    });
  }
  var epsilonInput = document.getElementById("id_epsilon");
  var probabilityInput = document.getElementById("id_truth_probability");
  var priorInput = document.getElementById("prior");
  var oddsView = document.getElementById("odds-view");
  var budgetView = document.getElementById("budget-view");
  var cumulativeView = document.getElementById("cumulative-view");
  var url = form.dataset.translateUrl;
  var remaining = parseFloat(form.dataset.remaining);
  var committed = parseFloat(form.dataset.committed);
  var pending = null;
  var latest = 0;

  function translate(params) {
    var query = new URLSearchParams(params);
    query.set("prior", String((parseFloat(priorInput.value) || 0) / 100));
    return fetch(url + "?" + query.toString(), { headers: { "Accept": "application/json" } })
      .then(function (response) { return response.ok ? response.json() : Promise.reject(response); });
  }

  // Only the answer to the newest edit may write to the form; older answers arrive late.
  function latestOnly(params) {
    var ticket = ++latest;
    return translate(params).then(function (result) {
      return ticket === latest ? result : Promise.reject("stale");
    });
  }

  function percent(x) { return (100 * x).toFixed(2) + "%"; }
  // ε to four significant digits without trailing zeros (0.5, 0.3333), as the pages write it.
  function short(x) { return String(Number(x.toPrecision(4))); }

  var groupInput = document.getElementById("group-size");
  var groupView = document.getElementById("group-view");
  var deltaInput = document.getElementById("id_delta");

  function showGroup(epsilon) {
    if (!groupInput || !groupView) { return; }
    var size = parseInt(groupInput.value, 10);
    if (!(size >= 1)) { return; }
    var kind = form.querySelector("input[name=definition_kind]:checked");
    var withDelta = kind && kind.value === "approx_dp" && parseFloat(deltaInput.value) > 0;
    var params = { epsilon: String(epsilon), group_size: String(size) };
    if (withDelta) { params.delta = deltaInput.value; }
    translate(params).then(function (result) {
      groupView.textContent = phrase(withDelta ? "group-delta" : "group", {
        size: result.group_size,
        epsilon: result.group_epsilon_text,
        delta: result.group_delta_text
      });
    }).catch(function () {});
  }

  function show(result) {
    showGroup(result.epsilon);
    oddsView.textContent = phrase("odds", {
      posterior: percent(result.posterior),
      prior: percent(result.prior)
    });
    var left = remaining - result.epsilon;
    budgetView.textContent = left >= 0
      ? phrase("leaves", { left: short(left), remaining: short(remaining) })
      : phrase("needs", { remaining: short(remaining) });
    budgetView.className = left >= 0 ? "" : "bad";
    translate({ epsilon: String(committed + result.epsilon) }).then(function (total) {
      cumulativeView.textContent = phrase("cumulative", {
        epsilon: short(total.epsilon),
        probability: total.truth_probability.toFixed(5)
      });
    });
  }

  function fromEpsilon() {
    var value = parseFloat(epsilonInput.value);
    if (!(value > 0)) { return; }
    latestOnly({ epsilon: String(value) }).then(function (result) {
      probabilityInput.value = result.truth_probability.toFixed(5);
      show(result);
    }).catch(function () {});
  }

  function fromProbability() {
    var value = parseFloat(probabilityInput.value);
    if (!(value > 0.5 && value < 1)) { return; }
    latestOnly({ truth_probability: String(value) }).then(function (result) {
      epsilonInput.value = result.epsilon.toFixed(5);
      show(result);
    }).catch(function () {});
  }

  function debounce(fn) {
    return function () { clearTimeout(pending); pending = setTimeout(fn, 150); };
  }

  epsilonInput.addEventListener("input", debounce(fromEpsilon));
  probabilityInput.addEventListener("input", debounce(fromProbability));
  priorInput.addEventListener("input", debounce(fromEpsilon));
  if (groupInput) { groupInput.addEventListener("input", debounce(fromEpsilon)); }
  if (deltaInput) { deltaInput.addEventListener("input", debounce(fromEpsilon)); }
  if (!epsilonInput.value) { epsilonInput.value = "0.5"; }
  fromEpsilon();
}());

// Shows only the sections of the chosen definition and policy, and charts how protection
// weakens with distance under a distance-threshold policy (⌈d/θ⌉·ε, the article's Definition 6).
(function () {
  "use strict";
  var form = document.getElementById("privacy-form");
  if (!form) { return; }
  // Sentences come from the page, in its language: data-* attributes of the form, with {names}.
  function phrase(name, values) {
    return (form.getAttribute("data-" + name) || "").replace(/\{(\w+)\}/g, function (whole, key) {
      return Object.prototype.hasOwnProperty.call(values || {}, key) ? values[key] : whole;
    });
  }
  var graphSelect = document.getElementById("id_policy_graph");

  function chosenKind() {
    var checked = form.querySelector("input[name=definition_kind]:checked");
    return checked ? checked.value : "pure_dp";
  }

  function drawDistanceChart() {
    var target = document.getElementById("distance-chart");
    // No policy section at all when Blowfish is not offered (a person key).
    if (!target || !window.Plotly) { return; }
    var theta = parseFloat(document.getElementById("id_policy_theta").value);
    var epsilon = parseFloat(document.getElementById("id_epsilon").value);
    if (!(theta > 0) || !(epsilon > 0) || target.offsetParent === null) { return; }
    var xs = [], ys = [];
    for (var i = 0; i <= 60; i++) {
      var d = i * theta / 10;
      xs.push(d);
      ys.push(d <= 0 ? 0 : Math.ceil(d / theta) * epsilon);
    }
    window.Plotly.react(target, [{ type: "scatter", mode: "lines", line: { shape: "hv" }, x: xs, y: ys }], {
      margin: { t: 10, r: 10, b: 45, l: 55 }, height: 220,
      xaxis: { title: { text: phrase("distance-axis") } },
      yaxis: { title: { text: phrase("protection-axis") }, rangemode: "tozero" }
    }, { displaylogo: false, responsive: true });
  }

  function update() {
    var kind = chosenKind();
    Array.prototype.forEach.call(form.querySelectorAll("[data-definition]"), function (section) {
      section.hidden = section.dataset.definition !== kind;
    });
    var graph = graphSelect ? graphSelect.value : "";
    Array.prototype.forEach.call(form.querySelectorAll("[data-graph]"), function (section) {
      section.hidden = section.dataset.graph !== graph;
    });
    drawDistanceChart();
  }

  form.addEventListener("change", update);
  form.addEventListener("input", function (event) {
    if (event.target.id === "id_policy_theta" || event.target.id === "id_epsilon") { drawDistanceChart(); }
  });
  update();
}());

// Says, as the policy is edited, what an attacker can and cannot learn under it (the engine's
// words, through the server).
(function () {
  "use strict";
  var form = document.getElementById("privacy-form");
  var box = document.getElementById("blowfish-explanation");
  if (!form || !box) { return; }
  var pending = null;
  // Sentences come from the page, in its language: data-* attributes of the form, with {names}.
  function phrase(name, values) {
    return (form.getAttribute("data-" + name) || "").replace(/\{(\w+)\}/g, function (whole, key) {
      return Object.prototype.hasOwnProperty.call(values || {}, key) ? values[key] : whole;
    });
  }

  function list(title, lines) {
    var wrapper = document.createElement("div");
    var heading = document.createElement("p");
    var strong = document.createElement("strong");
    strong.textContent = title;
    heading.appendChild(strong);
    var ul = document.createElement("ul");
    lines.forEach(function (line) {
      var li = document.createElement("li");
      li.textContent = line;
      ul.appendChild(li);
    });
    wrapper.appendChild(heading);
    wrapper.appendChild(ul);
    return wrapper;
  }

  // The fields each graph needs before the server can say anything about it: a half-typed
  // policy is not sent (it would only come back refused).
  var NEEDED = {
    partition_groups: ["policy_column", "policy_groups"],
    partition_width: ["policy_column", "policy_width"],
    distance_threshold: ["policy_theta"],
  };

  function policyComplete() {
    var graph = form.elements.policy_graph ? form.elements.policy_graph.value : "full_domain";
    var needed = NEEDED[graph] || [];
    if (graph === "distance_threshold" && !form.elements.policy_columns.value.trim()) {
      needed = needed.concat(["policy_column"]);
    }
    return needed.every(function (name) {
      return form.elements[name] && String(form.elements[name].value).trim() !== "";
    });
  }

  function refresh() {
    var kind = form.querySelector("input[name=definition_kind]:checked");
    if (!kind || kind.value !== "blowfish" || !policyComplete()) { return; }
    fetch(box.dataset.url, { method: "POST", body: new FormData(form), credentials: "same-origin",
                             headers: { "Accept": "application/json" } })
      .then(function (response) { return response.json(); })
      .then(function (result) {
        box.textContent = "";
        if (result.errors) {
          var messages = Object.keys(result.errors).map(function (k) { return result.errors[k].join(" "); });
          box.appendChild(list(phrase("finish-policy"), messages));
          return;
        }
        box.appendChild(list(phrase("protected"), result.protected));
        box.appendChild(list(phrase("not-protected"), result.not_protected));
      }).catch(function () {});
  }

  form.addEventListener("change", function () { clearTimeout(pending); pending = setTimeout(refresh, 200); });
  form.addEventListener("input", function () { clearTimeout(pending); pending = setTimeout(refresh, 400); });
  refresh();
}());

// Swaps in the risk card (the engine's numbers, rendered by the server) for the definition as
// it is edited; an incomplete definition gets the card's own prompt.
(function () {
  "use strict";
  var form = document.getElementById("privacy-form");
  var box = document.getElementById("risk-card-box");
  if (!form || !box) { return; }
  var pending = null;
  var asked = 0;

  function refresh() {
    var ticket = ++asked;
    fetch(box.dataset.url, { method: "POST", body: new FormData(form), credentials: "same-origin",
                             headers: { "Accept": "text/html" } })
      // A redirect is the login page after the session ended: never swap a whole page in.
      .then(function (response) {
        return response.ok && !response.redirected ? response.text() : Promise.reject(response);
      })
      .then(function (html) {
        if (ticket === asked) { box.innerHTML = html; }  // only the latest answer is shown
      }).catch(function () {});
  }

  form.addEventListener("change", function () { clearTimeout(pending); pending = setTimeout(refresh, 200); });
  form.addEventListener("input", function () { clearTimeout(pending); pending = setTimeout(refresh, 400); });
}());

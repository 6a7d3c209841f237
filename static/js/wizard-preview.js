// Names from curator input (columns, categories) reach Plotly only through plotlyText: Plotly reads
// a subset of HTML in its texts (<a href>, <b>, <span style>, <br>) and decodes entities into plain
// characters, so with &, < and > as entities a name is shown literally and never as markup.
function plotlyText(s) {
  return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

// Plots the expected error of each statistic against the release's ε (computed by the engine).
// Lines differ by dash and marker as well as colour (readable in grey and by people who do not
// tell colours apart), and the log axes carry one labelled tick per power of ten (D2: 1, 2 and 5 for a
// range of up to two decades), so their labels never overlap.
(function () {
  "use strict";
  var source = document.getElementById("error-chart-data");
  var target = document.getElementById("error-chart");
  if (!source || !target || !window.Plotly) { return; }
  // Words come from the page, in its language: data-* attributes, with {names}.
  function phrase(element, name, values) {
    return (element.getAttribute("data-" + name) || "").replace(/\{(\w+)\}/g, function (whole, key) {
      return Object.prototype.hasOwnProperty.call(values || {}, key) ? values[key] : whole;
    });
  }
  var chart = JSON.parse(source.textContent);
  var dashes = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"];
  var symbols = ["circle", "square", "diamond", "triangle-up", "x", "cross", "star", "triangle-down"];
  var colours = ["#2457c5", "#c0392b", "#1e8449", "#8e44ad", "#c77700", "#1d2430"];
  var low = Infinity, high = 0;
  var traces = chart.series.map(function (series, index) {
    series.y.forEach(function (y) { if (y > 0) { low = Math.min(low, y); high = Math.max(high, y); } });
    return {
      type: "scatter",
      mode: "lines+markers",
      name: plotlyText(series.name),
      x: series.x,
      y: series.y,
      line: { dash: dashes[index % dashes.length], color: colours[index % colours.length], width: 2 },
      // A marker on every fourth point: enough to tell the lines apart where they overlap.
      marker: { symbol: symbols[index % symbols.length], size: 8, maxdisplayed: 8 },
      hovertemplate: phrase(target, "hover", {
        name: plotlyText(series.name), epsilon: "%{x:.3g}", error: "%{y:.3g}"
      }) + "<extra></extra>"
    };
  });
  // Labels at every power of ten; over a narrow range, at 1, 2 and 5 times it (D2 ticks).
  function logAxis(title, from, to) {
    var decades = Math.log10(to / from);
    return { title: { text: title }, type: "log", dtick: decades > 2 ? 1 : "D2",
             tickformat: decades > 2 ? "~s" : "~g", exponentformat: "power", showgrid: true };
  }
  window.Plotly.newPlot(target, traces, {
    margin: { t: 20, r: 10, b: 60, l: 70 },
    xaxis: logAxis(phrase(target, "x-title"), chart.series.length ? chart.series[0].x[0] : 0.1,
                   chart.series.length ? chart.series[0].x[chart.series[0].x.length - 1] : 10),
    yaxis: logAxis(phrase(target, "y-title"), low > 0 && isFinite(low) ? low : 1, high > 0 ? high : 10),
    shapes: [{ type: "line", x0: chart.epsilon, x1: chart.epsilon, yref: "paper", y0: 0, y1: 1,
               line: { dash: "dot", color: "#1d2430", width: 1 } }],
    annotations: [{ x: Math.log10(chart.epsilon), yref: "paper", y: 1, text: phrase(target, "this-epsilon"),
                    showarrow: false, yanchor: "bottom", font: { size: 11 } }],
    legend: { orientation: "h", y: -0.3 }
  }, { responsive: true, displaylogo: false });
}());

// Simulated-table preview: simulated truth next to one noisy draw, per statistic.
(function () {
  "use strict";
  var source = document.getElementById("simulated-data");
  var container = document.getElementById("simulated-charts");
  if (!source || !container || !window.Plotly) { return; }
  // Words come from the page, in its language: data-* attributes, with {names}.
  function phrase(element, name, values) {
    return (element.getAttribute("data-" + name) || "").replace(/\{(\w+)\}/g, function (whole, key) {
      return Object.prototype.hasOwnProperty.call(values || {}, key) ? values[key] : whole;
    });
  }
  var namesSource = document.getElementById("kind-names");
  var kindNames = namesSource ? JSON.parse(namesSource.textContent) : {};
  JSON.parse(source.textContent).forEach(function (stat, index) {
    // A statistic without a simulated example (too many bins to draw) gets no chart.
    if (stat.simulated === null) { return; }
    // Raw text for the DOM (textContent, attributes); plotlyText only for what Plotly draws.
    var kind = kindNames[stat.kind] || stat.kind;
    var title = stat.column ? phrase(container, "title", { statistic: kind, column: stat.column })
      : stat.columns ? phrase(container, "title", { statistic: kind, column: stat.columns.join(", ") })
      : kind;
    var target = document.createElement("div");
    target.className = "chart";
    target.id = "simulated-" + index;
    // A figure, not an image: Plotly puts buttons (its mode bar) inside, which an image hides.
    target.setAttribute("role", "figure");
    target.setAttribute("aria-label", phrase(container, "label", { title: title }));
    container.appendChild(target);
    var labels, truth, noisy, minus, plus;
    if (stat.noisy !== null && typeof stat.noisy === "object") {
      labels = Object.keys(stat.noisy);
      truth = labels.map(function (k) { return stat.simulated[k]; });
      noisy = labels.map(function (k) { return stat.noisy[k]; });
      // A statistic without value intervals (a quantile: its accuracy is in ranks) has no bars.
      minus = labels.map(function (k) { return stat.ci95 ? stat.noisy[k] - stat.ci95[k][0] : 0; });
      plus = labels.map(function (k) { return stat.ci95 ? stat.ci95[k][1] - stat.noisy[k] : 0; });
    } else {
      labels = [title];
      truth = [stat.simulated];
      noisy = [stat.noisy];
      minus = [stat.noisy - stat.ci95[0]];
      plus = [stat.ci95[1] - stat.noisy];
    }
    var x = labels.map(plotlyText);
    window.Plotly.newPlot(target, [
      { type: "bar", name: phrase(container, "truth"), x: x, y: truth, marker: { color: "#b8c4dc" } },
      { type: "bar", name: phrase(container, "noisy"), x: x, y: noisy, marker: { color: "#2457c5" },
        error_y: { type: "data", symmetric: false, array: plus, arrayminus: minus } }
    ], {
      title: { text: plotlyText(title), font: { size: 14 } }, barmode: "group", height: 280,
      margin: { t: 40, r: 10, b: 40, l: 55 }, legend: { orientation: "h", y: -0.2 },
      // Categories stay text: a label such as "2024-01-01" or "10" is not read as a date or number.
      xaxis: { type: "category" }
    }, { responsive: true, displaylogo: false });
  });
}());

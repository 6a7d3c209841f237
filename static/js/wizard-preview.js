// Plots the expected error of each statistic against the release's ε (computed by the engine).
(function () {
  "use strict";
  var source = document.getElementById("error-chart-data");
  var target = document.getElementById("error-chart");
  if (!source || !target || !window.Plotly) { return; }
  var chart = JSON.parse(source.textContent);
  var traces = chart.series.map(function (series) {
    return { type: "scatter", mode: "lines", name: series.name, x: series.x, y: series.y };
  });
  window.Plotly.newPlot(target, traces, {
    margin: { t: 20, r: 10, b: 50, l: 60 },
    xaxis: { title: { text: "ε of the whole release" }, type: "log" },
    yaxis: { title: { text: "expected absolute error" }, type: "log" },
    shapes: [{ type: "line", x0: chart.epsilon, x1: chart.epsilon, yref: "paper", y0: 0, y1: 1,
               line: { dash: "dot", color: "#1d2430" } }],
    legend: { orientation: "h", y: -0.25 }
  }, { responsive: true, displaylogo: false });
}());

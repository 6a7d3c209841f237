// Draws each histogram of a release as a bar chart with its published 95% intervals.
(function () {
  "use strict";
  var source = document.getElementById("chart-data");
  if (!source || !window.Plotly) { return; }
  JSON.parse(source.textContent).forEach(function (chart) {
    var target = document.getElementById(chart.id);
    if (!target) { return; }
    window.Plotly.newPlot(target, [{
      type: "bar",
      x: chart.labels,
      y: chart.values,
      marker: { color: "#2457c5" },
      error_y: { type: "data", symmetric: false, array: chart.plus, arrayminus: chart.minus, color: "#1d2430" },
      hovertemplate: "%{x}: %{y}<extra></extra>"
    }], {
      margin: { t: 20, r: 10, b: 40, l: 50 },
      yaxis: { title: { text: chart.axis }, rangemode: "tozero" }
    }, { responsive: true, displaylogo: false });
  });
}());

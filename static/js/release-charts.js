// Draws each histogram of a release as a bar chart with its published 95% intervals.
// Labels arrive with &, < and > as entities (views.plotly_text): Plotly shows them as plain text
// and never as its link or style markup; nothing here may build markup from them.
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
      // Categories stay text: a label such as "2024-01-01" or "10" is not read as a date or number.
      xaxis: { type: "category" },
      yaxis: { title: { text: chart.axis }, rangemode: "tozero" }
    }, { responsive: true, displaylogo: false });
  });
}());

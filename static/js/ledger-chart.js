// Draws a dataset's budget over time as step lines: the ε total (initial budget plus top-ups),
// committed (spent plus reserved) and spent. The data comes from the page's json_script; hover
// labels arrive with &, < and > as entities (views.plotly_text), so Plotly shows them as text.
(function () {
  "use strict";
  var source = document.getElementById("ledger-chart-data");
  var target = document.getElementById("ledger-chart");
  if (!source || !target || !window.Plotly) { return; }
  var chart = JSON.parse(source.textContent);

  function line(name, values, color, dash) {
    return {
      type: "scatter",
      mode: "lines+markers",
      name: name,
      x: chart.at,
      y: values,
      text: chart.labels,
      line: { shape: "hv", color: color, dash: dash || "solid" },
      hovertemplate: name + ": ε %{y}<br>%{text}<extra></extra>"
    };
  }

  // The lines' names come from the page, in its language.
  var names = chart.names || { total: "total", committed: "committed", spent: "spent" };
  window.Plotly.newPlot(target, [
    line(names.total, chart.total, "#1d2430", "dash"),
    line(names.committed, chart.committed, "#c77700"),
    line(names.spent, chart.spent, "#c0392b")
  ], {
    margin: { t: 20, r: 10, b: 40, l: 50 },
    xaxis: { type: "date" },
    yaxis: { title: { text: "ε" }, rangemode: "tozero" },
    legend: { orientation: "h" }
  }, { responsive: true, displaylogo: false });
}());

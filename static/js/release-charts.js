// Draws each histogram of a release as a bar chart with its published 95% intervals, each 2-way
// table as a heatmap, each set of k-means centroids as a scatter sized by cluster and each
// synthetic table beside its published marginals.
// Labels arrive with &, < and > as entities (views.plotly_text): Plotly shows them as plain text
// and never as its link or style markup; nothing here may build markup from them.
(function () {
  "use strict";
  var source = document.getElementById("chart-data");
  if (!source || !window.Plotly) { return; }

  function errorBars(chart) {
    if (!chart.plus.length) { return { visible: false }; }
    return { type: "data", symmetric: false, array: chart.plus, arrayminus: chart.minus, color: "#1d2430" };
  }

  // A range histogram: bars on the column's own axis; dragging across the chart asks the page
  // for that range (the form's own submission, so the answer comes from the server).
  function rangeChart(target, chart) {
    window.Plotly.newPlot(target, [{
      type: "bar",
      x: chart.x,
      y: chart.values,
      width: chart.width,
      marker: { color: "#2457c5" },
      error_y: errorBars(chart),
      hovertemplate: "%{x}: %{y:.1f}<extra></extra>"
    }], {
      margin: { t: 20, r: 10, b: 40, l: 50 },
      dragmode: "select",
      selectdirection: "h",
      xaxis: { title: { text: chart.x_axis } },
      yaxis: { title: { text: chart.axis } }
    }, { responsive: true, displaylogo: false });
    var form = target.parentNode.querySelector("form.range-tool");
    if (!form) { return; }
    target.on("plotly_selected", function (event) {
      if (!event || !event.range || !event.range.x) { return; }
      form.querySelector("input[name=from]").value = String(event.range.x[0]);
      form.querySelector("input[name=to]").value = String(event.range.x[1]);
      form.requestSubmit();
    });
  }

  // A 2-way table: one coloured cell per pair of buckets, its published count written in it.
  function tableChart(target, chart) {
    window.Plotly.newPlot(target, [{
      type: "heatmap",
      x: chart.x,
      y: chart.y,
      z: chart.z,
      colorscale: "Blues",
      reversescale: true,
      texttemplate: "%{z:.1f}",
      hovertemplate: "%{y} × %{x}: %{z:.1f}<extra></extra>"
    }], {
      margin: { t: 20, r: 10, b: 50, l: 80 },
      xaxis: { type: "category", title: { text: chart.x_axis } },
      yaxis: { type: "category", title: { text: chart.y_axis }, autorange: "reversed" }
    }, { responsive: true, displaylogo: false });
  }

  // k-means' centroids: a scatter of the first two coordinates (or, for one column, a dot per
  // cluster on the column's axis), each marker's area in proportion to its cluster's size, with
  // the coordinates' 95% intervals as error bars. The hover text (built by the server from
  // escaped names, in the page's language) lists every coordinate and the size.
  function clustersChart(target, chart) {
    function bars(axis) {
      return { type: "data", symmetric: false, array: axis.plus, arrayminus: axis.minus, color: "#1d2430", thickness: 1 };
    }
    var two = Boolean(chart.y);
    var trace = {
      type: "scatter",
      mode: "markers+text",
      x: chart.x.values,
      y: two ? chart.y.values : chart.names,
      text: chart.markers,
      textposition: "top center",
      hovertext: chart.hover,
      hovertemplate: "%{hovertext}<extra></extra>",
      marker: { size: chart.marker_sizes, color: "#2457c5", opacity: 0.75, line: { color: "#1d2430", width: 1 } },
      error_x: bars(chart.x)
    };
    if (two) { trace.error_y = bars(chart.y); }
    window.Plotly.newPlot(target, [trace], {
      margin: { t: 20, r: 10, b: 50, l: two ? 60 : 80 },
      showlegend: false,
      xaxis: { title: { text: chart.x_axis }, zeroline: false },
      yaxis: two
        ? { title: { text: chart.y_axis }, zeroline: false }
        // One column: a row per cluster, cluster 1 on top.
        : { type: "category", autorange: "reversed" }
    }, { responsive: true, displaylogo: false });
  }

  // A synthetic table: for one column at a time (a menu picks it), each bucket's share of the
  // published noisy counts beside its share of the generated rows; the legend, axis and hover
  // texts come from the server in the page's language.
  function syntheticChart(target, chart) {
    var traces = [];
    chart.columns.forEach(function (column, i) {
      traces.push({
        type: "bar", name: chart.text.published, x: column.labels, y: column.published,
        visible: i === 0, marker: { color: "#2457c5" },
        hovertemplate: chart.text.published_hover + "<extra></extra>"
      });
      traces.push({
        type: "bar", name: chart.text.generated, x: column.labels, y: column.generated,
        visible: i === 0, marker: { color: "#e0a030" },
        hovertemplate: chart.text.generated_hover + "<extra></extra>"
      });
    });
    var buttons = chart.columns.map(function (column, i) {
      return {
        method: "restyle", label: column.name,
        args: ["visible", traces.map(function (_, t) { return Math.floor(t / 2) === i; })]
      };
    });
    window.Plotly.newPlot(target, traces, {
      margin: { t: 40, r: 10, b: 60, l: 60 },
      barmode: "group",
      legend: { orientation: "h", y: -0.2 },
      xaxis: { type: "category" },
      yaxis: { title: { text: chart.text.share }, tickformat: ".0%", rangemode: "tozero" },
      updatemenus: chart.columns.length > 1 ? [{ buttons: buttons, x: 0, y: 1.15, xanchor: "left", yanchor: "top" }] : []
    }, { responsive: true, displaylogo: false });
  }

  JSON.parse(source.textContent).forEach(function (chart) {
    var target = document.getElementById(chart.id);
    if (!target) { return; }
    if (chart.numeric) { rangeChart(target, chart); return; }
    if (chart.heatmap) { tableChart(target, chart); return; }
    if (chart.clusters) { clustersChart(target, chart); return; }
    if (chart.synthetic) { syntheticChart(target, chart); return; }
    window.Plotly.newPlot(target, [{
      type: "bar",
      x: chart.labels,
      y: chart.values,
      marker: { color: "#2457c5" },
      error_y: errorBars(chart),
      hovertemplate: "%{x}: %{y}<extra></extra>"
    }], {
      margin: { t: 20, r: 10, b: 40, l: 50 },
      // Categories stay text: a label such as "2024-01-01" or "10" is not read as a date or number.
      xaxis: { type: "category" },
      yaxis: { title: { text: chart.axis }, rangemode: "tozero" }
    }, { responsive: true, displaylogo: false });
  });
}());

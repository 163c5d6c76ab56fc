// A profile's rating charts: for each game type the rating after each of
// the latest games, drawn with uPlot from the points the page carries
// (data-points on each [data-rating-chart]). The summary above each chart
// says the same in words.
(() => {
  "use strict";
  if (typeof uPlot === "undefined") return;
  document.querySelectorAll("[data-rating-chart]").forEach((el) => {
    let data;
    try {
      data = JSON.parse(el.dataset.points || "[]");
    } catch (_) {
      return;
    }
    if (data.length !== 2 || data[0].length === 0) return;
    const axis = { stroke: "#94a3b8", grid: { stroke: "#1e293b" }, ticks: { stroke: "#334155" } };
    const chart = new uPlot(
      {
        width: el.clientWidth || 320,
        height: 200,
        legend: { show: false },
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: true } },
        axes: [axis, axis],
        series: [{}, { label: el.dataset.label + " rating", stroke: "#34d399", width: 2, points: { show: data[0].length < 40 } }],
      },
      data,
      el,
    );
    new ResizeObserver(() => chart.setSize({ width: el.clientWidth, height: 200 })).observe(el);
  });
})();

/* fleetcap charts: draws every <canvas data-chart="..." data-source="json-script-id">, on load and
   after each HTMX swap. Every chart's numbers are also in a table next to it. Chart.js is vendored
   under static/vendor/chartjs/. */
(function () {
  "use strict";
  const COLORS = { weights: "#4a5a80", runtime: "#8f6bb3", state: "#d08c2e", kv: "#2f8f6b", free: "#d7dce6",
                   reserve: "#f0f1f4", rent: "#c53030", api: "#2856d8", capacity: "#677085", load: "#c53030",
                   point: "#2856d8", frontier: "#c53030",
                   memory: "#2f8f6b", compute: "#4a5a80", communication: "#d08c2e", overhead: "#8f6bb3" };

  function readJSON(id) {
    const el = id && document.getElementById(id);
    return el ? JSON.parse(el.textContent) : null;
  }

  const builders = {
    envelope(data) {
      const parts = ["weights", "runtime", "state", "kv", "free", "reserve"];
      const labels = { weights: "Weights", runtime: "Runtime", state: "State", kv: "KV cache", free: "Free",
                       reserve: "Outside utilisation" };
      return {
        type: "bar",
        data: { labels: ["GiB per GPU"], datasets: parts.map((p) => ({ label: labels[p], data: [data[p]],
          backgroundColor: COLORS[p] })) },
        options: { indexAxis: "y", animation: false, responsive: true,
          scales: { x: { stacked: true, title: { display: true, text: "GiB" } }, y: { stacked: true } } },
      };
    },
    breakdown(data) {
      // One decode step's parts (ms), as planner.estimates.breakdown gives them.
      const parts = ["memory", "compute", "communication", "overhead"];
      const labels = { memory: "Memory", compute: "Compute", communication: "Communication", overhead: "Overhead" };
      return {
        type: "bar",
        data: { labels: ["ms per decode step"], datasets: parts.map((p) => ({ label: labels[p], data: [data[p + "_ms"]],
          backgroundColor: COLORS[p] })) },
        options: { indexAxis: "y", animation: false, responsive: true,
          scales: { x: { stacked: true, title: { display: true, text: "ms" } }, y: { stacked: true } } },
      };
    },
    capacity(data, canvas) {
      const load = readJSON(canvas.dataset.load);
      const datasets = [{ label: "Predicted concurrent sequences", data: data.map((p) => ({ x: p.context, y: p.sequences })),
                          borderColor: COLORS.capacity, backgroundColor: COLORS.capacity, tension: 0 }];
      if (load !== null && load !== undefined) {
        datasets.push({ label: "Running now", data: data.map((p) => ({ x: p.context, y: load })),
                        borderColor: COLORS.load, borderDash: [6, 4], pointRadius: 0 });
      }
      return { type: "line", data: { datasets }, options: { animation: false, parsing: false,
        scales: { x: { type: "logarithmic", title: { display: true, text: "context (tokens)" } },
                  y: { beginAtZero: true, title: { display: true, text: "sequences" } } } } };
    },
    breakeven(data) {
      const ds = [
        { label: "Rent (USD/month)", data: data.points.map((p) => ({ x: p.volume, y: p.rent })), borderColor: COLORS.rent, pointRadius: 0 },
        { label: "API (USD/month)", data: data.points.map((p) => ({ x: p.volume, y: p.api })), borderColor: COLORS.api, pointRadius: 0 },
      ];
      if (data.current) ds.push({ label: "Current volume", type: "scatter", data: [{ x: data.current.volume, y: data.current.api }],
                                  backgroundColor: "#000", pointRadius: 6 });
      if (data.breakeven) ds.push({ label: "Breakeven", type: "scatter", data: [{ x: data.breakeven.volume, y: data.breakeven.usd }],
                                    backgroundColor: COLORS.rent, pointStyle: "triangle", pointRadius: 8 });
      if (data.capacity) ds.push({ label: "Cluster capacity", data: [{ x: data.capacity, y: 0 }, { x: data.capacity, y: data.ymax }],
                                   borderColor: "#677085", borderDash: [4, 4], pointRadius: 0 });
      return { type: "line", data: { datasets: ds }, options: { animation: false, parsing: false,
        scales: { x: { type: "linear", title: { display: true, text: "output tokens per month (millions)" } },
                  y: { beginAtZero: true, title: { display: true, text: "USD per month" } } } } };
    },
    pareto(data) {
      return { type: "scatter", data: { datasets: [
        { label: "Feasible configurations", data: data.points, backgroundColor: COLORS.point },
        { label: "Pareto frontier", data: data.frontier, borderColor: COLORS.frontier, backgroundColor: COLORS.frontier,
          showLine: true, type: "line" } ] },
        options: { animation: false, parsing: false,
          scales: { x: { title: { display: true, text: "TPOT (ms)" } },
                    y: { title: { display: true, text: "USD per million output tokens" } } } } };
    },
    timeseries(data) {
      return { type: "line", data: { labels: data.labels, datasets: data.series.map((s) => ({ label: s.label, data: s.values,
        borderColor: s.color, borderDash: s.dash || [], pointRadius: 0, spanGaps: true })) },
        options: { animation: false, scales: { y: { beginAtZero: true, title: { display: !!data.unit, text: data.unit } } } } };
    },
  };

  function draw(root) {
    if (typeof Chart === "undefined") return;
    (root || document).querySelectorAll("canvas[data-chart]").forEach((canvas) => {
      const build = builders[canvas.dataset.chart];
      const data = readJSON(canvas.dataset.source);
      if (!build || data === null) return;
      const existing = Chart.getChart(canvas);
      if (existing) existing.destroy();
      new Chart(canvas, build(data, canvas));
      canvas.dataset.drawn = "1";
    });
  }

  window.fleetcapCharts = { draw };
  document.addEventListener("DOMContentLoaded", () => draw(document));
  document.addEventListener("htmx:afterSettle", (event) => draw(event.target));
})();

/* Spend trend (templates/planner/spend.html): USD per month over 12 months, spent and projected as
   two stacked bars, so a projection never reads as spent. Self-contained: its own draw on load and
   after HTMX swaps, for <canvas data-chart="spendTrend" data-source="json-script-id">. */
(function () {
  "use strict";
  function drawSpendTrend(root) {
    if (typeof Chart === "undefined") return;
    (root || document).querySelectorAll('canvas[data-chart="spendTrend"]').forEach((canvas) => {
      const el = document.getElementById(canvas.dataset.source);
      if (!el) return;
      const data = JSON.parse(el.textContent);
      const existing = Chart.getChart(canvas);
      if (existing) existing.destroy();
      const unpriced = new Set(data.incomplete || []);
      new Chart(canvas, {
        type: "bar",
        data: { labels: data.labels.map((m) => (unpriced.has(m) ? m + " (unpriced days)" : m)), datasets: [
          { label: "Spent (USD)", data: data.actual, backgroundColor: "#2856d8", stack: "usd" },
          { label: "Projected (USD)", data: data.projected, backgroundColor: "rgba(40, 86, 216, 0.25)",
            borderColor: "#2856d8", borderWidth: 1, borderDash: [4, 3], stack: "usd" },
        ] },
        options: { animation: false, responsive: true, aspectRatio: 3,
          scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, title: { display: true, text: "USD" } } } },
      });
      canvas.dataset.drawn = "1";
    });
  }
  document.addEventListener("DOMContentLoaded", () => drawSpendTrend(document));
  document.addEventListener("htmx:afterSettle", (event) => drawSpendTrend(event.target));
})();

/* fleetcap charts: draws every <canvas data-chart="..." data-source="json-script-id">, on load and
   after each HTMX swap. Every chart's numbers come from the server (json_script) and are also in a
   table next to it. Chart.js is vendored under static/vendor/chartjs/. A canvas alone in a
   <div class="chart"> (static/css/app.css gives the box its height) fills that box and follows its
   width (``sized``, used by every chart of this file). */
(function () {
  "use strict";
  const COLORS = { weights: "#4a5a80", runtime: "#8f6bb3", state: "#d08c2e", kv: "#2f8f6b", free: "#d7dce6",
                   reserve: "#f0f1f4", short: "#e8a0a0", rent: "#c53030", api: "#2856d8", buy: "#2f8f6b", capacity: "#677085", load: "#c53030",
                   point: "#2856d8", frontier: "#c53030",
                   memory: "#2f8f6b", compute: "#4a5a80", communication: "#d08c2e", overhead: "#8f6bb3",
                   gpu: "#c53030", mark: "#8f6bb3", step: "#141a26" };
  const compact = new Intl.NumberFormat("en", { notation: "compact", maximumFractionDigits: 1 });
  // A log axis labelled at its powers of ten only, in short form (1K, 10K, 1M): no overlapping labels.
  const logTicks = { maxRotation: 0, autoSkip: true,
                     callback: (v) => (Number.isInteger(Math.log10(v)) ? compact.format(v) : "") };

  if (typeof Chart !== "undefined") {
    // Every chart's legend compact (small swatches; a smaller font on a phone), so on a narrow screen
    // it leaves the plot its room instead of running over it.
    const phone = window.matchMedia("(max-width: 47.99rem)").matches;
    Chart.defaults.font.size = phone ? 10 : 12;
    Chart.defaults.plugins.legend.labels.boxWidth = phone ? 10 : 24;
    Chart.defaults.plugins.legend.labels.padding = phone ? 6 : 10;
  }

  function sized(canvas, config) {
    // Chart.js responsive; in a sized <div class="chart"> the box's height, not an aspect ratio.
    const boxed = !!canvas.parentElement && canvas.parentElement.classList.contains("chart");
    config.options = Object.assign({ responsive: true }, config.options, boxed ? { maintainAspectRatio: false } : {});
    return config;
  }

  function readJSON(id) {
    const el = id && document.getElementById(id);
    return el ? JSON.parse(el.textContent) : null;
  }

  const builders = {
    envelope(data) {
      // The parts add up to the GPU memory the bar is drawn against (planner.headroom.envelope); a load
      // the usable memory cannot hold is drawn past it, as "Short".
      const parts = ["weights", "runtime", "state", "kv", "free", "reserve"].concat(data.short > 0 ? ["short"] : []);
      const labels = { weights: "Weights", runtime: "Runtime", state: "State", kv: "KV cache", free: "Free",
                       reserve: "Outside utilisation", short: "Short" };
      const datasets = parts.map((p) => ({ label: labels[p], data: [data[p]], backgroundColor: COLORS[p] }));
      const scales = { x: { stacked: true, title: { display: true, text: "GiB (binary: 1 GiB = 1,073,741,824 bytes)" } },
                       y: { stacked: true } };
      if (typeof data.gpu === "number") {
        // The GPU's whole memory as a vertical line across the bar (its own hidden 0-1 axis).
        datasets.push({ type: "line", label: `GPU memory (${data.gpu.toFixed(2)} GiB)`, yAxisID: "mark", stack: "mark",
                        data: [{ x: data.gpu, y: 0 }, { x: data.gpu, y: 1 }], borderColor: COLORS.gpu,
                        backgroundColor: COLORS.gpu, borderWidth: 2, borderDash: [6, 4], pointRadius: 0 });
        scales.mark = { type: "linear", min: 0, max: 1, display: false };
      }
      return { type: "bar", data: { labels: ["GiB per GPU"], datasets },
               options: { indexAxis: "y", animation: false, scales } };
    },
    breakdown(data) {
      // One decode step's parts (ms), as planner.estimates.breakdown gives them. They overlap (memory
      // and compute inside a stage, communication under two-batch overlap), so each is its own bar from
      // 0, not stacked, beside the step they overlap into.
      const parts = ["memory", "compute", "communication", "overhead", "step"];
      const labels = { memory: "Memory", compute: "Compute", communication: "Communication", overhead: "Overhead",
                       step: "Whole step" };
      return {
        type: "bar",
        data: { labels: parts.map((p) => labels[p]), datasets: [{ label: "ms", data: parts.map((p) => data[p + "_ms"]),
          backgroundColor: parts.map((p) => COLORS[p]) }] },
        options: { indexAxis: "y", animation: false, plugins: { legend: { display: false } },
          scales: { x: { stacked: false, beginAtZero: true, title: { display: true, text: "ms (parts overlap)" } },
                    y: { stacked: false } } },
      };
    },
    capacity(data, canvas) {
      // Both axes logarithmic: sequences span orders of magnitude from 1k to 1M tokens of context.
      // A context where nothing fits (0 sequences) has no place on a log axis: a gap (the table has it).
      const load = readJSON(canvas.dataset.load);
      const mark = readJSON(canvas.dataset.mark);
      const points = data.map((p) => ({ x: p.context, y: p.sequences > 0 ? p.sequences : null }));
      const datasets = [{ label: "Predicted concurrent sequences", data: points,
                          borderColor: COLORS.capacity, backgroundColor: COLORS.capacity, tension: 0 }];
      const shown = points.map((p) => p.y).filter((y) => y !== null);
      if (load !== null && load !== undefined) {
        datasets.push({ label: "Running now", data: data.map((p) => ({ x: p.context, y: load > 0 ? load : null })),
                        borderColor: COLORS.load, borderDash: [6, 4], pointRadius: 0 });
        if (load > 0) shown.push(load);
      }
      if (mark && mark.tokens && shown.length) {
        datasets.push({ label: mark.label, data: [{ x: mark.tokens, y: Math.min(...shown) }, { x: mark.tokens, y: Math.max(...shown) }],
                        borderColor: COLORS.mark, backgroundColor: COLORS.mark, borderDash: [4, 4], borderWidth: 2, pointRadius: 0 });
      }
      return { type: "line", data: { datasets }, options: { animation: false, parsing: false,
        scales: { x: { type: "logarithmic", ticks: logTicks, title: { display: true, text: "context (tokens, log scale)" } },
                  y: { type: "logarithmic", ticks: logTicks,
                       title: { display: true, text: "concurrent sequences (log scale)" } } } } };
    },
    breakeven(data) {
      // Rent (and buy) step up at each multiple of the cluster's capacity: another cluster
      // (planner.breakeven.cost_curve gives the points, the steps included).
      const ds = [
        { label: "Rent (USD/month, one more cluster past each capacity)", data: data.points.map((p) => ({ x: p.volume, y: p.rent })),
          borderColor: COLORS.rent, pointRadius: 0 },
        { label: "API (USD/month)", data: data.points.map((p) => ({ x: p.volume, y: p.api })), borderColor: COLORS.api, pointRadius: 0 },
      ];
      if (data.buy !== null && data.buy !== undefined)
        ds.push({ label: "Buy (USD/month, with depreciation)", data: data.points.map((p) => ({ x: p.volume, y: p.buy })),
                  borderColor: COLORS.buy, borderDash: [8, 3], pointRadius: 0 });
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
      // Every feasible configuration the plan kept (planner.plans.plan_chart: all, or thinned with the whole
      // frontier kept; the caption beside the canvas says how many of how many), as [tpot_ms, usd_per_mtok],
      // and the Pareto frontier drawn as a line through its points in order of cost.
      const xy = (p) => ({ x: p[0], y: p[1] });
      return { type: "scatter", data: { datasets: [
        { label: `Feasible configurations (${data.drawn.toLocaleString("en")} of ${data.feasible.toLocaleString("en")})`,
          data: data.points.map(xy),
          backgroundColor: COLORS.point, pointRadius: 2 },
        { label: "Pareto frontier", data: data.frontier.map(xy), borderColor: COLORS.frontier,
          backgroundColor: COLORS.frontier, showLine: true, type: "line", pointRadius: 3, tension: 0 } ] },
        options: { animation: false, parsing: false,
          scales: { x: { title: { display: true, text: "TPOT (ms)" } },
                    y: { title: { display: true, text: "USD per million output tokens" } } } } };
    },
    timeseries(data) {
      // ``data.axes`` (optional): one y axis per unit, e.g. TTFT on the left and TPOT on the right, each
      // series naming its own (``axis``) with its SLO drawn as a flat series on the same axis. An SLO
      // (``slo``) is drawn above the data (Chart.js draws the lowest ``order`` last), thicker; the points
      // past it (``marks``, chosen by the view) as triangles without a line.
      const datasets = data.series.map((s) => ({ label: s.label, data: s.values, yAxisID: s.axis || "y",
        borderColor: s.color, backgroundColor: s.color, borderDash: s.dash || [], spanGaps: !s.marks,
        order: s.slo ? 0 : s.marks ? 1 : 2, borderWidth: s.slo ? 3 : 2, showLine: !s.marks,
        pointRadius: s.marks ? 5 : 0, pointStyle: s.marks ? "triangle" : "circle" }));
      let scales = { y: { beginAtZero: true, title: { display: !!data.unit, text: data.unit } } };
      if (data.axes) {
        scales = {};
        Object.entries(data.axes).forEach(([id, axis], i) => {
          scales[id] = { beginAtZero: true, position: i === 0 ? "left" : "right", grid: { drawOnChartArea: i === 0 },
                         title: { display: true, text: axis.title } };
        });
      }
      return { type: "line", data: { labels: data.labels, datasets }, options: { animation: false, scales } };
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
      new Chart(canvas, sized(canvas, build(data, canvas)));
      canvas.dataset.drawn = "1";
    });
  }

  window.fleetcapCharts = { draw, sized };
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
      new Chart(canvas, window.fleetcapCharts.sized(canvas, {
        type: "bar",
        data: { labels: data.labels.map((m) => (unpriced.has(m) ? m + " (unpriced days)" : m)), datasets: [
          { label: "Spent (USD)", data: data.actual, backgroundColor: "#2856d8", stack: "usd" },
          { label: "Projected (USD)", data: data.projected, backgroundColor: "rgba(40, 86, 216, 0.25)",
            borderColor: "#2856d8", borderWidth: 1, borderDash: [4, 3], stack: "usd" },
        ] },
        options: { animation: false,
          scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, title: { display: true, text: "USD" } } } },
      }));
      canvas.dataset.drawn = "1";
    });
  }
  document.addEventListener("DOMContentLoaded", () => drawSpendTrend(document));
  document.addEventListener("htmx:afterSettle", (event) => drawSpendTrend(event.target));
})();

/* The prefix-cache chart (templates/planner/_prefix_cache_result.html): reused prompt tokens (% of the
   trace's, bars; the token-level ideal as a dashed line) and the retained checkpoints' memory (GiB per
   GPU, right axis) against block size, the engine's own block drawn in another colour and marked.
   Self-contained: draws every canvas[data-chart="prefix-cache"] on load and after each HTMX swap. */
(function () {
  "use strict";
  const REUSE = "#2f8f6b", CHOICE = "#c53030", MEMORY = "#4a5a80", IDEAL = "#677085";

  function drawPrefixCache(root) {
    if (typeof Chart === "undefined") return;
    (root || document).querySelectorAll('canvas[data-chart="prefix-cache"]').forEach((canvas) => {
      const source = document.getElementById(canvas.dataset.source);
      if (!source) return;
      const data = JSON.parse(source.textContent);
      const labels = data.labels.map((g, i) => (i === data.choice ? g + " (engine)" : String(g)));
      const colours = data.labels.map((_, i) => (i === data.choice ? CHOICE : REUSE));
      const marker = data.labels.map((_, i) => (i === data.choice ? data.reuse_percent[i] : null));
      const existing = Chart.getChart(canvas);
      if (existing) existing.destroy();
      new Chart(canvas, window.fleetcapCharts.sized(canvas, {
        data: {
          labels,
          datasets: [
            { type: "bar", label: "Reused prompt tokens (%)", data: data.reuse_percent, backgroundColor: colours, yAxisID: "y" },
            { type: "line", label: "Token-level cache (%)", data: data.labels.map(() => data.ideal_percent),
              borderColor: IDEAL, borderDash: [6, 4], pointRadius: 0, yAxisID: "y" },
            { type: "line", label: "Checkpoint memory (GiB per GPU)", data: data.memory_gib, borderColor: MEMORY,
              backgroundColor: MEMORY, yAxisID: "memory" },
            { type: "line", showLine: false, label: "Engine's choice: " + data.choice_label, data: marker, backgroundColor: CHOICE,
              borderColor: CHOICE, pointStyle: "triangle", pointRadius: 9, yAxisID: "y" },
          ],
        },
        options: {
          animation: false,
          scales: {
            x: { title: { display: true, text: "block size (tokens)" } },
            y: { beginAtZero: true, suggestedMax: 100, title: { display: true, text: "% of prompt tokens" } },
            memory: { position: "right", beginAtZero: true, grid: { drawOnChartArea: false },
                      title: { display: true, text: "GiB per GPU" } },
          },
        },
      }));
      canvas.dataset.drawn = "1";
      canvas.dataset.choice = data.choice === null ? "" : String(data.labels[data.choice]);
    });
  }

  document.addEventListener("DOMContentLoaded", () => drawPrefixCache(document));
  document.addEventListener("htmx:afterSettle", (event) => drawPrefixCache(event.target));
})();

// charts.js wraps uPlot (vendored, see vendor/VENDORED.md) in the few chart kinds the
// playground draws: lines over time, areas stacked by outcome, and dots on lanes. uPlot does
// the drawing; this module only chooses options and keeps each chart as wide as its box.

import uPlot from "./vendor/uplot/uPlot.esm.js";

// colours are the Okabe–Ito palette, safe for the common colour blindnesses; style.css uses
// the same values for the counters. The scenario page replaces them with the palette
// GET /api/scenarios serves (scenario.Palette), the one the HTML report draws in.
export const colours = {
  ok: "#009e73",
  limited: "#e69f00",
  shed: "#d55e00",
  error: "#cc79a7",
  timeout: "#56b4e9",
  blue: "#0072b2",
  ink: "#1d2330",
  muted: "#8a93a3",
  yellow: "#f0e442",
  refused: "#f0e442",
};

// series colours in order, for charts whose series are not outcomes.
export const cycle = [colours.blue, colours.shed, colours.ok, colours.limited, colours.error, colours.timeout, colours.ink, colours.muted];

const axisStyle = { stroke: "#3a4150", grid: { stroke: "#e6e9ef", width: 1 }, ticks: { stroke: "#c9ced8", width: 1 } };

// secondsAxis labels the x axis in seconds since the start (runs and traces are short, and
// "t = 12 s" reads better in class than a clock time). whole keeps the ticks on whole
// seconds, for series sampled once a second: no "0.5 s" between two samples.
function secondsAxis(label, whole = false) {
  const axis = { ...axisStyle, label, values: (u, splits) => splits.map((v) => `${trim(v)} s`) };
  return whole ? { ...axis, incrs: [1, 2, 5, 10, 15, 30, 60, 120, 300, 600] } : axis;
}

function trim(v) {
  return Number.isInteger(v) ? String(v) : v.toFixed(2).replace(/0+$/, "").replace(/\.$/, "");
}

// fit keeps a chart as wide as the element holding it.
function fit(plot, el, height) {
  const resize = () => plot.setSize({ width: Math.max(200, el.clientWidth), height });
  new ResizeObserver(resize).observe(el);
  resize();
}

// latest is the index of the last value of data that is not null, or null.
function latest(data) {
  for (let i = (data?.length ?? 0) - 1; i >= 0; i--) if (data[i] != null) return i;
  return null;
}

// timeLegend is the x series of a chart over time: the legend shows the second under the
// cursor, or the latest one while the cursor is elsewhere, so the legend is never blank.
function timeLegend() {
  return { label: "t", value: (u, v) => { const x = v ?? u.data[0][latest(u.data[0])]; return x == null ? "–" : `${trim(x)} s${v == null ? " (latest)" : ""}`; } };
}

// showLatest refreshes a legend with the latest values while no cursor is over the chart.
function showLatest(plot) {
  if (plot.cursor.idx == null) plot.setLegend({ idx: null });
}

// lineChart draws one line per series over time. series: [{label, colour, dash?, width?,
// fill?, right?}]; a series marked right is drawn against a second scale, on the right,
// labelled y2Label (a queue a hundred times the capacity beside it). The returned chart's
// setData(xs, ys) takes the x values (seconds) and one array per series (null leaves a gap).
// The legend shows the values under the cursor, or the latest ones.
export function lineChart(el, { series, yLabel, y2Label, height = 240, yRange, step = false, xLabel = "time since start", wholeSeconds = false }) {
  const zeroUp = { range: (u, min, max) => [0, Math.max(1, max * 1.1)] };
  const right = series.some((s) => s.right);
  const opts = {
    width: el.clientWidth || 600,
    height,
    scales: { x: { time: false }, y: yRange ? { range: yRange } : zeroUp, ...(right ? { y2: zeroUp } : {}) },
    axes: [
      secondsAxis(xLabel, wholeSeconds),
      { ...axisStyle, label: yLabel, size: 60 },
      ...(right ? [{ ...axisStyle, scale: "y2", side: 1, label: y2Label, size: 60, grid: { show: false } }] : []),
    ],
    series: [
      timeLegend(),
      ...series.map((s) => ({
        label: s.label,
        scale: s.right ? "y2" : "y",
        stroke: s.colour,
        width: s.width ?? 2,
        dash: s.dash,
        fill: s.fill,
        paths: step ? uPlot.paths.stepped({ align: 1 }) : undefined,
        points: { show: false },
        value: (u, v, si, idx) => {
          const x = idx == null ? u.data[si][latest(u.data[si])] : v;
          return x == null ? "–" : s.format ? s.format(x) : trim(round(x));
        },
      })),
    ],
    legend: { live: true },
    cursor: { drag: { x: false, y: false } },
  };
  const plot = new uPlot(opts, [[], ...series.map(() => [])], el);
  fit(plot, el, height);
  return {
    plot,
    setData(xs, ys) { plot.setData([xs, ...ys]); showLatest(plot); },
  };
}

// stackedChart draws areas stacked on each other, bottom series first, so the height of the
// whole stack is the total and each band is one part of it (requests/s by outcome). The
// legend shows each part's own value, not the running sum: under the cursor, or the latest.
export function stackedChart(el, { series, yLabel, height = 260, xLabel = "time since start", wholeSeconds = false }) {
  let raw = [[], ...series.map(() => [])];
  const opts = {
    width: el.clientWidth || 600,
    height,
    scales: { x: { time: false }, y: { range: (u, min, max) => [0, Math.max(1, max * 1.1)] } },
    axes: [secondsAxis(xLabel, wholeSeconds), { ...axisStyle, label: yLabel, size: 60 }],
    series: [
      timeLegend(),
      ...series.map((s, i) => ({
        label: s.label,
        stroke: s.colour,
        fill: i === 0 ? s.colour + "b3" : undefined, // the bottom area fills down to zero
        width: 1,
        points: { show: false },
        value: (u, v, si, idx) => {
          const at = idx ?? latest(raw[0]);
          return at == null || raw[i + 1][at] == null ? "–" : trim(round(raw[i + 1][at]));
        },
      })),
    ],
    // each band fills between a series and the one under it, so bands never overlap.
    bands: series.slice(1).map((s, i) => ({ series: [i + 2, i + 1], fill: s.colour + "b3" })),
    legend: { live: true },
    cursor: { drag: { x: false, y: false } },
  };
  const plot = new uPlot(opts, raw, el);
  fit(plot, el, height);
  return {
    plot,
    setData(xs, ys) {
      raw = [xs, ...ys];
      const stacked = [xs];
      let below = xs.map(() => 0);
      for (const y of ys) {
        below = y.map((v, i) => below[i] + (v ?? 0));
        stacked.push(below);
      }
      plot.setData(stacked);
      showLatest(plot);
    },
  };
}

// laneChart puts each row (an algorithm) on its own horizontal lane and draws one dot per
// event on it: filled for one state (allowed), hollow for the other (denied), so the two read
// apart without colour too.
export function laneChart(el, { lanes, xs, marks, height, on = "allowed", off = "denied" }) {
  // marks[lane][i] is true, false or null (no event of this lane at xs[i]).
  const data = [xs];
  const series = [{ label: "t", value: (u, v) => (v == null ? "–" : `${trim(v)} s`) }];
  lanes.forEach((name, lane) => {
    const y = lanes.length - lane; // first lane on top
    data.push(marks[lane].map((m) => (m === true ? y : null)));
    data.push(marks[lane].map((m) => (m === false ? y : null)));
    series.push(
      { label: `${name} ${on}`, stroke: colours.ok, paths: () => null, points: { show: true, size: 10, fill: colours.ok, stroke: colours.ok }, value: (u, v) => (v == null ? "" : on) },
      { label: `${name} ${off}`, stroke: colours.shed, paths: () => null, points: { show: true, size: 10, width: 2, fill: "#ffffff", stroke: colours.shed }, value: (u, v) => (v == null ? "" : off) },
    );
  });
  const h = height ?? 70 + lanes.length * 36;
  const opts = {
    width: el.clientWidth || 600,
    height: h,
    scales: { x: { time: false }, y: { range: [0.4, lanes.length + 0.6] } },
    axes: [
      secondsAxis("time in the trace"),
      { ...axisStyle, size: 130, splits: () => lanes.map((_, i) => lanes.length - i), values: (u, splits) => splits.map((v) => lanes[lanes.length - v] ?? "") },
    ],
    series,
    legend: { show: false },
    cursor: { drag: { x: true, y: false }, points: { show: false } },
  };
  const plot = new uPlot(opts, data, el);
  fit(plot, el, h);
  return { plot };
}

function round(v) {
  return Math.abs(v) >= 100 ? Math.round(v) : Math.round(v * 100) / 100;
}

// lab.js is the algorithm lab page: it sends the trace and the limit to POST /api/lab, which
// replays them on the gateway's in-memory limiters (the engine of `boxoffice lab`), and draws
// each algorithm's decisions side by side.

import { colours, cycle, laneChart, lineChart } from "./charts.js";
import { getJSON, postJSON } from "./api.js";
import { clear, el } from "./dom.js";

const form = document.getElementById("lab-form");
const traceBox = document.getElementById("trace");
const preset = document.getElementById("preset");
const errorBox = document.getElementById("lab-error");
const algorithmsBox = document.getElementById("algorithms");
const showRequests = document.getElementById("show-requests");
const requestsView = document.getElementById("requests-view");

let lanes = null;
let cumulative = null;

async function loadPreset(name) {
  const resp = await fetch(`traces/${encodeURIComponent(name)}.trace`);
  if (!resp.ok) throw new Error(`sample trace ${name}: ${resp.status}`);
  traceBox.value = await resp.text();
  // Each sample says in its comment which limit shows it best; the form starts from that.
  const m = traceBox.value.match(/--limit (\d+) --window (\S+)(?: --burst (\d+))?(?: --max-delay (\S+))?/);
  if (m) {
    form.limit.value = m[1];
    form.window.value = m[2].replace(/[:,.]$/, "");
    form.burst.value = m[3] ?? "0";
    form.max_delay.value = (m[4] ?? "").replace(/[:,.]$/, "");
    for (const name of ["parent", "ceiling", "reserve", "replicas"]) {
      form[name].value = traceBox.value.match(new RegExp(`--${name} (\\d+)`))?.[1] ?? "0";
    }
    form.sync.value = traceBox.value.match(/--sync ([\d.]+[a-zµ]+)/)?.[1] ?? "";
  }
}

// Under a parent only the buckets decide (a level of a hierarchy is a token bucket or GCRA).
const hierarchyAlgorithms = ["token_bucket", "gcra"];

function chosenAlgorithms() {
  return [...algorithmsBox.querySelectorAll("input:checked")].map((i) => i.value);
}

function request() {
  const req = {
    trace: traceBox.value,
    limit: Number(form.limit.value),
    window: form.window.value.trim(),
    burst: Number(form.burst.value || 0),
    max_delay: form.max_delay.value.trim(),
    algorithms: chosenAlgorithms(),
    parent: Number(form.parent.value || 0),
    ceiling: Number(form.ceiling.value || 0),
    reserve: Number(form.reserve.value || 0),
    sync: form.sync.value.trim(),
  };
  // Replicas count approximately only when they sync; without a sync the field is left out.
  if (req.sync) req.replicas = Number(form.replicas.value || 0);
  if (req.parent) req.algorithms = req.algorithms.filter((a) => hierarchyAlgorithms.includes(a));
  return req;
}

function showCommand(req) {
  let cmd = `boxoffice lab --trace my.trace --limit ${req.limit} --window ${req.window}`;
  if (req.burst) cmd += ` --burst ${req.burst}`;
  if (req.max_delay) cmd += ` --max-delay ${req.max_delay}`;
  for (const name of ["parent", "ceiling", "reserve"]) if (req[name]) cmd += ` --${name} ${req[name]}`;
  if (req.sync) cmd += ` --sync ${req.sync}` + (req.replicas ? ` --replicas ${req.replicas}` : "");
  if (req.algorithms.length && req.algorithms.length < algorithmsBox.querySelectorAll("input").length) {
    cmd += ` --algorithms ${req.algorithms.join(",")}`;
  }
  // The table below is the command's --show requests; without it, the page draws what --json prints.
  document.getElementById("cli").textContent = cmd + (showRequests.checked ? " --show requests" : " --json");
}

function toggleRequests() {
  requestsView.hidden = !showRequests.checked;
  showCommand(request());
}

async function replay() {
  const req = request();
  showCommand(req);
  errorBox.textContent = "";
  let answer;
  try {
    answer = await postJSON("api/lab", req);
  } catch (err) {
    errorBox.textContent = err.message;
    return;
  }
  drawSummary(answer, req);
  drawCharts(answer);
  drawDecisions(answer);
  document.body.dataset.replayed = String(answer.requests.length);
}

function drawSummary({ requests, results }, req) {
  const box = document.getElementById("summary");
  clear(box);
  box.append(el("p", {}, `${requests.length} requests, limit ${req.limit} per ${req.window}` + (req.burst ? `, burst ${req.burst}` : "") +
    (req.max_delay ? `, a queue waiting at most ${req.max_delay}` : "") +
    (req.parent ? ` per key, under a parent of ${req.parent}` : "") +
    (req.sync ? `; counted approximately too, on ${req.replicas || 3} replicas syncing every ${req.sync}` : "") + "."));
  const under = req.parent > 0;
  // Approximate lines (a sync) say by how much a window passed the limit, as the command's over column.
  const approx = results.some((r) => r.replicas);
  const extra = (r) => {
    if (under) return [el("td", { class: "num" }, String(r.borrows ?? 0))];
    if (approx) return [el("td", { class: "num" }, r.replicas ? String(r.over ?? 0) : "–")];
    return [];
  };
  const table = el("table", { id: "summary-table" },
    el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "algorithm"), el("th", { scope: "col", class: "num" }, "allowed"), el("th", { scope: "col", class: "num" }, "denied"),
      ...(under ? [el("th", { scope: "col", class: "num" }, "borrowed")] : []),
      ...(approx && !under ? [el("th", { scope: "col", class: "num" }, "over")] : []))),
    el("tbody", {}, ...results.map((r) => el("tr", { "data-algorithm": name(r) },
      el("th", { scope: "row" }, name(r)),
      el("td", { class: "num" }, String(r.allowed)),
      el("td", { class: "num" }, String(r.denied)),
      ...extra(r)))));
  box.append(table);
  // A line that read the trace differently says so, as the command's notes do.
  for (const r of results.filter((r) => r.note)) {
    box.append(el("p", { class: "hint", "data-note": name(r) }, el("strong", {}, name(r)), `: ${r.note}.`));
  }
}

function drawCharts({ requests, results }) {
  const xs = requests.map((q) => q.at);
  const names = results.map(name);

  const laneBox = document.getElementById("lanes");
  lanes?.plot.destroy();
  clear(laneBox);
  lanes = laneChart(laneBox, { lanes: names, xs, marks: results.map((r) => r.decisions) });

  const cumBox = document.getElementById("cumulative");
  cumulative?.plot.destroy();
  clear(cumBox);
  const running = (flags) => { let n = 0; return flags.map((f, i) => (n += f ? requests[i].cost : 0)); };
  let sent = 0;
  cumulative = lineChart(cumBox, {
    yLabel: "cost units",
    xLabel: "time in the trace",
    step: true,
    series: [
      { label: "sent", colour: colours.muted, dash: [6, 4] },
      ...results.map((r, i) => ({ label: name(r), colour: cycle[i % cycle.length] })),
    ],
  });
  cumulative.setData(xs, [requests.map((q) => (sent += q.cost)), ...results.map((r) => running(r.decisions))]);
}

// name is a line's name: the queue's or an approximate line's label, or the algorithm.
function name(r) {
  return r.label || r.algorithm;
}

// verdict says what a line did with request i: allowed at once, waited its turn (the queue's
// line), or denied.
function verdict(r, i) {
  if (!r.decisions[i]) return "✗ deny";
  if (r.borrowed?.[i]) return "↑ borrow";
  const wait = r.delays?.[i] ?? 0;
  return wait > 0 ? `⏳ wait ${wait.toFixed(3)} s` : "✓ allow";
}

function drawDecisions({ requests, results }) {
  const box = document.getElementById("decisions");
  clear(box);
  const head = el("tr", {}, el("th", { scope: "col", class: "num" }, "#"), el("th", { scope: "col", class: "num" }, "time (s)"),
    el("th", { scope: "col" }, "key"), el("th", { scope: "col", class: "num" }, "cost"),
    ...results.map((r) => el("th", { scope: "col" }, name(r))));
  const rows = requests.map((q, i) => {
    const flags = results.map((r) => r.decisions[i]);
    const disagree = flags.some((f) => f !== flags[0]);
    return el("tr", disagree ? { class: "disagree" } : {},
      el("td", { class: "num" }, String(i + 1)), el("td", { class: "num" }, q.at.toFixed(3)),
      el("td", {}, q.key || "(none)"), el("td", { class: "num" }, String(q.cost)),
      ...results.map((r, j) => el("td", { class: flags[j] ? "allowed" : "denied" },
        `${verdict(r, i)} ${r.remaining[i]}` + (r.parent ? `/${r.parent[i]}` : ""))));
  });
  box.append(el("table", { id: "decision-table" }, el("thead", {}, head), el("tbody", {}, ...rows)));
}

async function start() {
  const { algorithms } = await getJSON("api/lab");
  for (const name of algorithms) {
    algorithmsBox.append(el("label", {}, el("input", { type: "checkbox", name: "algorithm", value: name, checked: "" }), name));
  }
  await loadPreset(preset.value);
  preset.addEventListener("change", async () => { await loadPreset(preset.value); await replay(); });
  form.addEventListener("submit", (e) => { e.preventDefault(); replay(); });
  showRequests.addEventListener("change", toggleRequests);
  requestsView.hidden = !showRequests.checked;
  await replay();
}

start().catch((err) => { errorBox.textContent = err.message; });

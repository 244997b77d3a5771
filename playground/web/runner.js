// runner.js is the scenario page: it starts a run (POST /api/runs), follows it over
// Server-Sent Events (GET /api/runs/{id}/events: state, sample, event, result), draws the
// live series, and turns knobs (POST /api/runs/{id}/knobs).

import { colours, lineChart, stackedChart } from "./charts.js";
import { getJSON, postJSON } from "./api.js";
import { clear, el } from "./dom.js";

const $ = (id) => document.getElementById(id);
const form = $("run-form");
const scenarioSelect = $("scenario");
const profileSelect = $("profile");
const startButton = $("start");
const stopButton = $("stop");
const statusLine = $("run-status");
const progress = $("run-progress");
const errorBox = $("run-error");
const knobsForm = $("knobs");
const log = $("log");

let scenarios = [];
let current = null; // the scenario shown
let run = null; // {id, state, phases, total} of the run followed
let source = null; // its EventSource
let data = null; // its series, one array per chart line
let totals = null; // its sums, for the counters above the charts
let counterNames = [];
let pending = false; // a redraw is scheduled
let knobValues = {}; // the knobs' values in force, by name
let touched = new Set(); // the knobs the user set in this run, until a phase sets them again

// The charts are made once the palette is known (makeCharts); a run only replaces their data.
let outcomes = null;
let latency = null;
let backend = null;
let goodput = null;
let cycle = [];
let counterKinds = []; // "count" or "gauge", per counter
let counterCharts = []; // [{idx: counters drawn, chart}] for counts, then levels

// The rate limiter's decision paths as GET api/scenarios describes them: colour and meaning,
// the same the HTML report uses. A path the list does not know is drawn too.
let paths = { known: [], otherColours: ["#1d2330"], otherHelp: "" };
let pathsDrawn = []; // the paths of the decisions chart, in stacking order
let decisions = null; // its chart, made again when a new path appears
// withoutStoreWindow is how many seconds the "made without the store" tile looks back.
const withoutStoreWindow = 10;

// ---- scenarios, profiles, knobs ----

// usePalette takes the series colours the report uses too (scenario.Palette), for the charts
// and for the tiles' edges.
function usePalette(palette, seriesCycle) {
  const names = { ok: "ok", too_many: "limited", unavailable: "shed", server: "error", failed: "timeout", refused: "refused", blue: "blue", ink: "ink", muted: "muted" };
  for (const [name, colour] of Object.entries(palette ?? {})) {
    if (!names[name]) continue;
    colours[names[name]] = colour;
    document.documentElement.style.setProperty(`--${names[name]}`, colour);
  }
  cycle = seriesCycle?.length ? seriesCycle : [colours.blue, colours.shed, colours.ok, colours.limited, colours.error, colours.timeout, colours.ink, colours.muted];
}

function makeCharts() {
  outcomes = stackedChart($("chart-outcomes"), {
    wholeSeconds: true,
    yLabel: "requests / s",
    series: [
      { label: "2xx", colour: colours.ok },
      { label: "429", colour: colours.limited },
      { label: "503", colour: colours.shed },
      { label: "other 5xx", colour: colours.error },
      { label: "4xx refusals", colour: colours.refused },
      { label: "timeouts, errors", colour: colours.timeout },
    ],
  });
  latency = lineChart($("chart-latency"), {
    wholeSeconds: true,
    yLabel: "milliseconds",
    series: [
      { label: "p50", colour: colours.ok },
      { label: "p95", colour: colours.blue },
      { label: "p99", colour: colours.shed, width: 3 },
    ],
  });
  // The queue on its own scale: it can be a hundred times the slots, and on theirs the
  // capacity line would lie flat at the bottom. A log scale would hide the zeros that say
  // "no queue", which is what a student watches for.
  backend = lineChart($("chart-backend"), {
    wholeSeconds: true,
    yLabel: "requests in flight / slots",
    y2Label: "queued",
    series: [
      { label: "in flight", colour: colours.blue },
      { label: "capacity", colour: colours.ink, dash: [6, 4] },
      { label: "queued (right)", colour: colours.shed, right: true },
    ],
  });
  goodput = lineChart($("chart-goodput"), {
    wholeSeconds: true,
    yLabel: "per second",
    series: [
      { label: "attempts sent", colour: colours.shed },
      { label: "unique requests", colour: colours.blue, dash: [6, 4] },
      { label: "goodput", colour: colours.ok, width: 3 },
    ],
  });
}

async function loadScenarios() {
  const answer = await getJSON("api/scenarios");
  usePalette(answer.palette, answer.series_cycle);
  makeCharts();
  scenarios = answer.scenarios;
  paths = { known: answer.decision_paths ?? [], otherColours: answer.other_path_colours ?? paths.otherColours, otherHelp: answer.other_path_help ?? "" };
  makeDecisionsChart();
  clear(scenarioSelect);
  for (const sc of scenarios) scenarioSelect.append(el("option", { value: sc.name }, sc.name));
  scenarioSelect.addEventListener("change", () => showScenario(scenarioSelect.value));
  profileSelect.addEventListener("change", showProfileTitle);
  if (scenarios.length) showScenario(scenarios[0].name);
}

function showScenario(name, profile) {
  current = scenarios.find((s) => s.name === name);
  if (!current) return;
  scenarioSelect.value = name;
  clear(profileSelect);
  for (const p of current.profiles) profileSelect.append(el("option", { value: p.name }, p.name));
  if (profile) profileSelect.value = profile;
  showProfileTitle();

  const text = $("explainer-text");
  clear(text);
  if (current.title) text.append(el("p", {}, el("strong", {}, current.title)));
  for (const para of (current.explainer || "").split(/\n\s*\n/)) {
    if (para.trim()) text.append(el("p", {}, para.trim()));
  }
  if (current.docs) text.append(el("p", {}, "Read more in the lesson ", el("code", {}, current.docs), " of the BoxOffice repository."));

  // Only a scenario that fixes a backend's capacity has its in-flight work to show.
  $("backend-box").hidden = !current.backend?.service;
  // The 4xx answers the scenario expects are refusals, not failures: the tile says which.
  const expected = current.client?.expected ?? [];
  $("refused-name").textContent = expected.length
    ? `expected refusals: ${expected.map((e) => `${e.status} ${e.meaning}`).join(", ")}`
    : "other 4xx refusals";
  drawKnobs();
  makeCounterCharts();
}

function showProfileTitle() {
  const p = current?.profiles.find((x) => x.name === profileSelect.value);
  $("profile-title").textContent = p?.title ?? "";
}

function drawKnobs() {
  clear(knobsForm);
  knobValues = Object.fromEntries((current.knobs ?? []).map((k) => [k.name, k.default]));
  touched = new Set();
  for (const k of current.knobs ?? []) {
    const id = `knob-${k.name}`;
    // A numeric knob's range, when the scenario states one, is shown before a value is refused.
    const range = k.max ? `from ${k.min || "0"} to ${k.max}` : "";
    const hint = [k.help, range].filter(Boolean).join("; ");
    const help = hint ? el("span", { class: "hint", id: `${id}-help` }, ` ${hint}`) : null;
    let control;
    if (k.kind === "bool") {
      control = el("input", { type: "checkbox", id, name: k.name, "aria-describedby": help ? `${id}-help` : null });
      control.checked = k.default === "true";
      control.addEventListener("change", () => setKnob(k.name, String(control.checked), control));
      knobsForm.append(el("div", { class: "knob", "data-knob": k.name }, el("label", { for: id }, control, ` ${k.label || k.name}`), help, note(k)));
      continue;
    }
    if (k.kind === "enum") {
      control = el("select", { id, name: k.name, "aria-describedby": help ? `${id}-help` : null }, ...k.options.map((o) => el("option", { value: o }, o)));
      control.value = k.default;
      control.addEventListener("change", () => setKnob(k.name, control.value, control));
      knobsForm.append(el("div", { class: "knob", "data-knob": k.name }, el("label", { for: id }, k.label || k.name, help), control, note(k)));
      continue;
    }
    control = el("input", { type: "text", id, name: k.name, inputmode: k.kind === "duration" ? "text" : "decimal", value: k.default, "aria-describedby": help ? `${id}-help` : null });
    const apply = el("button", { type: "button", class: "secondary", id: `${id}-set` }, "Set");
    apply.addEventListener("click", () => setKnob(k.name, control.value.trim(), control));
    control.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); apply.click(); } });
    knobsForm.append(el("div", { class: "knob", "data-knob": k.name }, el("label", { for: id }, k.label || k.name, help), el("div", { class: "row" }, control, apply), note(k)));
  }
  enableKnobs(run?.state === "running");
  showNotes();
}

// note is the place under a knob for what the knob cannot say by itself: that it does
// nothing now, or that a later phase will set it again. It is described by it too.
function note(k) {
  return el("p", { class: "note", id: `knob-${k.name}-note`, "aria-live": "polite", hidden: true });
}

// showNotes writes every knob's note from the values in force: a knob that needs another
// knob (KnobSpec.needs) is inert while that one has another value; a knob the user set
// will be set again by a later phase of the run.
function showNotes() {
  for (const k of current?.knobs ?? []) {
    const box = $(`knob-${k.name}-note`);
    if (!box) continue;
    let text = "";
    let kind = "";
    const need = k.needs;
    if (need && !need.values.includes(knobValues[need.knob])) {
      const other = current.knobs.find((o) => o.name === need.knob);
      text = `No effect now: ${other?.label || need.knob} is ${say(other, knobValues[need.knob])}; this acts only when it is ${need.values.map((v) => say(other, v)).join(" or ")}.`;
      kind = "inert";
    }
    const next = touched.has(k.name) ? nextSetting(k.name) : null;
    if (next) {
      text = (text ? text + " " : "") + `Phase “${next.phase}” sets this to ${say(k, next.value)} at ${clock(next.at)}.`;
      kind = kind || "override";
    }
    box.textContent = text;
    box.hidden = !text;
    box.dataset.note = kind;
    box.closest(".knob").toggleAttribute("data-inert", kind === "inert");
  }
}

// say writes a knob's value as its control shows it: a checkbox is on or off.
function say(k, v) {
  if (k?.kind === "bool") return v === "true" ? "on" : "off";
  return `“${v}”`;
}

// nextSetting is the first phase after the current one that sets the knob, with the value
// and when (seconds since the start); null when none will.
function nextSetting(name) {
  if (!run?.phases.length) return null;
  const now = Math.max(0, run.phases.findIndex((p) => p.name === run.phase));
  let at = 0;
  for (const [i, p] of run.phases.entries()) {
    if (i > now && p.knobs && name in p.knobs) return { phase: p.name, value: p.knobs[name], at };
    at += p.seconds;
  }
  return null;
}

// clock writes seconds as m:ss.
function clock(secs) {
  const s = Math.round(secs);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

function enableKnobs(on) {
  for (const c of knobsForm.querySelectorAll("input, select, button")) c.disabled = !on;
}

// showKnobValues puts values a phase set into the controls, so they show what is in force;
// a knob the phase set is no longer the user's.
function showKnobValues(values) {
  for (const [name, value] of Object.entries(values ?? {})) {
    knobValues[name] = value;
    touched.delete(name);
    const c = $(`knob-${name}`);
    if (!c) continue;
    if (c.type === "checkbox") c.checked = value === "true";
    else c.value = value;
  }
  showNotes();
}

async function setKnob(name, value, control) {
  if (!run) return;
  errorBox.textContent = "";
  control.disabled = true;
  try {
    await postJSON(`api/runs/${run.id}/knobs`, { name, value });
    knobValues[name] = value;
    touched.add(name);
    showNotes();
  } catch (err) {
    errorBox.textContent = `${name}: ${err.message}`;
  } finally {
    control.disabled = run?.state !== "running";
  }
}

// makeCounterCharts draws the scenario's own series: counts (per second) and levels (gauges,
// such as a queue's length) apart, since their scales differ; each has a tile too.
function makeCounterCharts() {
  const specs = current.counters ?? [];
  counterNames = specs.map((c) => c.name);
  counterKinds = specs.map((c) => c.kind || "count");
  const tiles = $("counter-tiles");
  clear(tiles);
  specs.forEach((c, i) => tiles.append(el("div", { class: "tile", "data-counter": c.name },
    el("div", { class: "value", id: `counter-${i}` }, "–"),
    el("div", { class: "name" }, (c.label || c.name) + (counterKinds[i] === "gauge" ? ", now" : ", in all")))));
  for (const chart of counterCharts) chart.chart?.plot.destroy();
  counterCharts = ["count", "gauge"].map((kind) => {
    const box = $(kind === "count" ? "chart-counts" : "chart-levels");
    clear(box);
    const idx = specs.map((_, i) => i).filter((i) => counterKinds[i] === kind);
    $(kind === "count" ? "counts-box" : "levels-box").hidden = idx.length === 0;
    if (!idx.length) return { idx, chart: null };
    const chart = lineChart(box, {
      wholeSeconds: true,
      yLabel: kind === "count" ? "per second" : "level",
      series: idx.map((i, n) => ({ label: specs[i].label || specs[i].name, colour: cycle[n % cycle.length] })),
    });
    return { idx, chart };
  });
}

// ---- the limiter's decisions by path ----

// pathInfo is a path's colour and meaning. An unknown path's colour is picked by the sum of
// its name's UTF-8 bytes, as the report picks it (scenario.OtherPathColour).
function pathInfo(name) {
  const known = paths.known.find((p) => p.name === name);
  if (known) return known;
  let sum = 0;
  for (const b of new TextEncoder().encode(name)) sum += b;
  return { name, colour: paths.otherColours[sum % paths.otherColours.length], help: paths.otherHelp };
}

// sortPaths puts path names in stacking order: the known ones as listed, then the others by
// name (scenario.SortPaths).
function sortPaths(names) {
  const rank = (n) => { const i = paths.known.findIndex((p) => p.name === n); return i < 0 ? paths.known.length : i; };
  return [...names].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
}

// makeDecisionsChart draws one band per path in pathsDrawn, and lists what each path means:
// every known path, and any other this run has shown.
function makeDecisionsChart() {
  decisions?.plot.destroy();
  const box = $("chart-decisions");
  clear(box);
  decisions = stackedChart(box, {
    wholeSeconds: true,
    yLabel: "decisions / s",
    series: pathsDrawn.map((name) => ({ label: name, colour: pathInfo(name).colour })),
  });
  const list = $("decision-paths");
  clear(list);
  for (const name of sortPaths([...new Set([...paths.known.map((p) => p.name), ...pathsDrawn])])) {
    const info = pathInfo(name);
    const swatch = el("i", { "aria-hidden": "true" });
    swatch.style.backgroundColor = info.colour;
    list.append(el("dt", { "data-path": name }, swatch, name), el("dd", {}, info.help));
  }
}

// addDecisions records a second's decisions by path; a path seen for the first time makes
// the chart again with a band of its own.
function addDecisions(byPath) {
  data.decisions.push(byPath ?? null);
  const fresh = Object.keys(byPath ?? {}).filter((p) => !pathsDrawn.includes(p));
  if (fresh.length) {
    pathsDrawn = sortPaths([...pathsDrawn, ...fresh]);
    makeDecisionsChart();
  }
}

// withoutStore is the share of the last seconds' decisions made without the store
// (fallback, fail_closed); null when there were none.
function withoutStore() {
  let all = 0;
  let without = 0;
  for (const byPath of data.decisions.slice(-withoutStoreWindow)) {
    for (const [name, n] of Object.entries(byPath ?? {})) {
      all += n;
      if (pathInfo(name).without_store) without += n;
    }
  }
  return all ? without / all : null;
}

// ---- a run ----

async function start(e) {
  e.preventDefault();
  errorBox.textContent = "";
  startButton.disabled = true;
  try {
    const info = await postJSON("api/runs", { scenario: scenarioSelect.value, profile: profileSelect.value, duration: $("duration").value });
    follow(info);
  } catch (err) {
    errorBox.textContent = err.message;
    startButton.disabled = false;
  }
}

async function stop() {
  if (!run) return;
  stopButton.disabled = true;
  try { await postJSON(`api/runs/${run.id}/stop`); } catch (err) { errorBox.textContent = err.message; }
}

function follow(info) {
  source?.close();
  if (info.scenario !== current?.name) showScenario(info.scenario, info.profile);
  else showKnobValues(Object.fromEntries((current.knobs ?? []).map((k) => [k.name, k.default])));
  touched = new Set();
  profileSelect.value = info.profile;
  showProfileTitle();
  run = { id: info.id, scenario: info.scenario, profile: info.profile, state: info.state, phases: [], total: 0, phase: null, stopped: false };
  clear($("phases"));
  document.body.dataset.run = info.id;
  resetData();
  showState(info);
  source = new EventSource(`api/runs/${encodeURIComponent(info.id)}/events`);
  // Every (re)connection replays the run from its start.
  source.addEventListener("open", resetData);
  source.addEventListener("state", (m) => showState(JSON.parse(m.data)));
  source.addEventListener("sample", (m) => addSample(JSON.parse(m.data)));
  source.addEventListener("event", (m) => addEvent(JSON.parse(m.data)));
  source.addEventListener("result", (m) => { showResult(JSON.parse(m.data)); source.close(); });
  source.addEventListener("error", () => {
    if (source.readyState === EventSource.CONNECTING) statusLine.textContent = `Run ${run.id}: connection lost, reconnecting…`;
  });
}

function showState(info) {
  run.state = info.state;
  if (info.phases?.length && !run.phases.length) {
    run.phases = info.phases.map((p) => ({ ...p, seconds: seconds(p.duration) }));
    run.total = run.phases.reduce((s, p) => s + p.seconds, 0);
    drawPhases();
  }
  statusLine.dataset.state = info.state;
  const active = info.state === "starting" || info.state === "running";
  startButton.disabled = active;
  stopButton.disabled = !active;
  enableKnobs(info.state === "running");
  progress.hidden = !run.total;
  if (info.error) errorBox.textContent = info.error;
  if (info.state === "failed" && !info.phases?.length) source?.close();
  describe();
}

// drawPhases lists the profile's phases with their times, so the charts' x axis reads as
// "the spike started at 5 s".
function drawPhases() {
  const list = $("phases");
  clear(list);
  let from = 0;
  for (const p of run.phases) {
    const knobs = Object.entries(p.knobs ?? {}).map(([k, v]) => `${k} = ${v}`).join(", ");
    list.append(el("li", { "data-phase": p.name },
      el("time", {}, `${Math.round(from)}–${Math.round(from + p.seconds)} s`),
      el("span", {}, el("strong", {}, p.name), ` ${p.to ? `${p.rate}→${p.to}` : p.rate}/s` + (knobs ? `; sets ${knobs}` : ""))));
    from += p.seconds;
  }
}

function describe() {
  const words = { starting: "setting the system up", running: "running", done: run.stopped ? "stopped early" : "finished", failed: "failed" };
  let text = `Run ${run.id} (${run.scenario} / ${run.profile}): ${words[run.state] ?? run.state}`;
  const t = data?.t.length ? data.t[data.t.length - 1] + 1 : 0;
  const planned = Math.round(run.total);
  if (planned && t <= planned) text += `, ${t} s of about ${planned} s`;
  else if (planned) text += `, ${t} s: the profile's ${planned} s are over and the last requests are finishing`;
  if (run.phase) text += `, phase “${run.phase}”`;
  statusLine.textContent = text + ".";
  progress.value = run.total ? Math.min(1, t / run.total) : 0;
}

function resetData() {
  data = { t: [], ok: [], tooMany: [], unavailable: [], server: [], refused: [], failed: [], p50: [], p95: [], p99: [], inFlight: [], queued: [], capacity: [], sent: [], requests: [], goodput: [], counters: counterNames.map(() => []), decisions: [] };
  pathsDrawn = [];
  makeDecisionsChart();
  totals = { sent: 0, requests: 0, ok: 0, tooMany: 0, unavailable: 0, server: 0, refused: 0, failed: 0 };
  clear(log);
  $("expectations-box").hidden = true;
  document.body.dataset.samples = "0";
  redraw();
}

function addSample(s) {
  const d = data;
  const at = s.t;
  d.t.push(at);
  d.ok.push(s.ok); d.tooMany.push(s.too_many); d.unavailable.push(s.unavailable);
  // Answered 4xx are refusals (the scenario may expect them); timeouts and errors got no answer.
  d.server.push(s.server_errors); d.refused.push(s.client_errors); d.failed.push(s.timeouts + (s.errors ?? 0));
  const accepted = s.ok > 0;
  d.p50.push(accepted ? s.p50 : null); d.p95.push(accepted ? s.p95 : null); d.p99.push(accepted ? s.p99 : null);
  // A gauge that could not be read (-1) is a gap.
  const gauge = (v) => (v >= 0 ? v : null);
  d.inFlight.push(gauge(s.backend_in_flight)); d.queued.push(gauge(s.backend_queued)); d.capacity.push(s.backend_capacity > 0 ? s.backend_capacity : null);
  d.sent.push(s.sent); d.requests.push(s.requests); d.goodput.push(s.goodput);
  counterNames.forEach((n, i) => d.counters[i].push(s.counters?.[n] ?? null));
  addDecisions(s.decisions);

  totals.sent += s.sent; totals.requests += s.requests; totals.ok += s.ok; totals.tooMany += s.too_many;
  totals.unavailable += s.unavailable; totals.server += s.server_errors;
  totals.refused += s.client_errors; totals.failed += s.timeouts + (s.errors ?? 0);
  if (s.phase && s.phase !== run.phase) {
    run.phase = s.phase;
    for (const li of $("phases").children) li.toggleAttribute("aria-current", li.dataset.phase === s.phase);
    showKnobValues(run.phases.find((p) => p.name === s.phase)?.knobs);
    showNotes();
  }
  $("last-p99").textContent = accepted ? `${Math.round(s.p99)} ms` : "–";
  document.body.dataset.samples = String(d.t.length);
  scheduleRedraw();
}

// Samples arrive one a second live, but a late joiner gets the whole history at once:
// drawing once per frame keeps that cheap.
function scheduleRedraw() {
  if (pending) return;
  pending = true;
  requestAnimationFrame(() => { pending = false; redraw(); });
}

function redraw() {
  const d = data;
  if (!outcomes) return;
  outcomes.setData(d.t, [d.ok, d.tooMany, d.unavailable, d.server, d.refused, d.failed]);
  latency.setData(d.t, [d.p50, d.p95, d.p99]);
  backend.setData(d.t, [d.inFlight, d.capacity, d.queued]);
  goodput.setData(d.t, [d.sent, d.requests, d.goodput]);
  for (const { idx, chart } of counterCharts) chart?.setData(d.t, idx.map((i) => d.counters[i]));
  // A second whose decisions could not be read is a gap (null), not a second without any.
  decisions.setData(d.t, pathsDrawn.map((p) => d.decisions.map((byPath) => (byPath ? byPath[p] ?? 0 : null))));

  $("total-sent").textContent = count(totals.sent);
  $("total-ok").textContent = count(totals.ok);
  $("total-too-many").textContent = count(totals.tooMany);
  $("total-unavailable").textContent = count(totals.unavailable);
  $("total-server-errors").textContent = count(totals.server);
  $("total-refused").textContent = count(totals.refused);
  $("total-failed").textContent = count(totals.failed);
  $("total-amplification").textContent = totals.requests ? (totals.sent / totals.requests).toFixed(2) : "–";
  const share = withoutStore();
  $("without-store").textContent = share == null ? "–" : `${Math.round(share * 100)} %`;
  // The tile's edge: green while the store decides everything, red once anything was not.
  $("without-store-tile").dataset.kind = share == null ? "" : share > 0 ? "shed" : "ok";
  // A count's tile is its sum so far; a level's is where it stands now.
  counterNames.forEach((_, i) => {
    const series = d.counters[i];
    const v = counterKinds[i] === "gauge" ? series.findLast((x) => x != null) : series.reduce((a, x) => a + (x ?? 0), 0);
    $(`counter-${i}`).textContent = v == null || !series.length ? "–" : count(Math.round(v * 100) / 100);
  });
  if (run) describe();
}

function count(n) {
  return n.toLocaleString("en");
}

function addEvent(ev) {
  const at = (ev.at / 1e9).toFixed(1); // nanoseconds since the run started
  log.append(el("li", { "data-kind": ev.kind }, el("time", {}, `${at} s`), el("span", {}, el("strong", {}, ev.kind), " ", ev.what)));
  log.scrollTop = log.scrollHeight;
}

function showResult(res) {
  run.stopped = res.stopped;
  describe();
  const list = $("expectations");
  clear(list);
  for (const o of res.expectations ?? []) {
    list.append(el("li", { class: o.passed ? "met" : "missed" }, `${o.name}: measured ${o.got}, wanted ${o.want}`));
  }
  if (res.error) list.append(el("li", { class: "missed" }, `the run did not complete: ${res.error}`));
  else if (res.stopped) list.append(el("li", {}, "The run was stopped early, so its expectations were not checked: they compare whole phases."));
  $("expectations-box").hidden = list.childElementCount === 0;
}

// seconds reads a Go duration ("1m30s", "250ms", "2.5s") as seconds.
function seconds(text) {
  if (typeof text === "number") return text / 1e9;
  const units = { h: 3600, m: 60, s: 1, ms: 1e-3, "µs": 1e-6, us: 1e-6, ns: 1e-9 };
  let total = 0;
  for (const [, n, u] of String(text).matchAll(/([\d.]+)(ms|µs|us|ns|h|m|s)/g)) total += Number(n) * units[u];
  return total;
}

// A page opened (or reloaded) after a run started shows the latest run: live while it is
// active, replayed once it is over. A playground that has just started may first be putting
// back what a run of a playground that died left in the system; no run starts before.
async function resume() {
  const { runs, putting_back: puttingBack } = await getJSON("api/runs");
  if (runs?.length) follow(runs[0]);
  else if (puttingBack) statusLine.textContent = "The previous run's changes are still being put back; a run can start once they are.";
}

form.addEventListener("submit", start);
stopButton.addEventListener("click", stop);
loadScenarios().then(resume).catch((err) => { errorBox.textContent = err.message; });

// Runs a k6 script's life once in Node, with the stand-ins of node_modules/k6: setup, each
// scenario's function (or default) once, then teardown, as k6 would with one VU. Before the
// run, each control hook of CONTROL_URLS holds the knobs of HOOK_KNOBS (JSON); the harness
// prints {"before": …, "after": …, "writes": n}, the hooks' knobs around the run.
import { hooks, writes } from 'k6/http';

const urls = (process.env.CONTROL_URLS || '').split(',').filter((u) => u !== '');
const knobs = JSON.parse(process.env.HOOK_KNOBS);
for (const url of urls) {
  hooks.set(url, knobs);
}
globalThis.__ENV = { ...process.env };
globalThis.__VU = 1;
globalThis.__ITER = 0;

const before = Object.fromEntries(hooks);
const script = await import(process.argv[2]);
const data = script.setup ? script.setup() : undefined;
const scenarios = Object.values((script.options && script.options.scenarios) || { main: {} });
for (const sc of scenarios) {
  const fn = script[sc.exec || 'default'];
  if (typeof fn !== 'function') {
    throw new Error(`scenario function ${sc.exec || 'default'} is not exported`);
  }
  fn(data);
}
if (script.teardown) {
  script.teardown(data);
}
console.log(JSON.stringify({ before, after: Object.fromEntries(hooks), writes }));

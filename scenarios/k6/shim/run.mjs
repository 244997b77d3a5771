// Runs a k6 script's life in Node through the shim beside this file: setup(), then each of
// options.scenarios in order of startTime, its function (exec, or the default) called
// ITERATIONS times (default 1) as VU 1, then teardown(). It prints what the run did as JSON:
// every request and its answer, the checks' passes and fails, the custom metrics' samples.
//
//   node scenarios/k6/shim/run.mjs scenarios/k6/flash-sale.js
//
// No arrival rates, durations or thresholds: those need k6 and real load.
import { register } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

register('./hooks.mjs', import.meta.url);
const { record } = await import('./k6/record.js');

const iterations = parseInt(process.env.ITERATIONS || '1', 10);
globalThis.__ENV = { ...process.env };
globalThis.__VU = 0;
globalThis.__ITER = 0;

// seconds is a k6 duration ("36s", "1m", "500ms") in seconds, for ordering the scenarios.
function seconds(d) {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(d || '0s');
  return m ? Number(m[1]) * { ms: 0.001, s: 1, m: 60, h: 3600 }[m[2]] : 0;
}

const script = await import(pathToFileURL(path.resolve(process.argv[2])).href);
record.scenario = 'setup';
const data = script.setup ? script.setup() : undefined;
const scenarios = Object.entries((script.options && script.options.scenarios) || { default: {} })
  .sort(([, a], [, b]) => seconds(a.startTime) - seconds(b.startTime));
globalThis.__VU = 1;
for (const [name, sc] of scenarios) {
  const fn = script[sc.exec || 'default'];
  if (typeof fn !== 'function') {
    throw new Error(`scenario ${name}: function ${sc.exec || 'default'} is not exported`);
  }
  record.scenario = name;
  const n = sc.executor === 'per-vu-iterations' ? Math.min(sc.iterations || 1, iterations) : iterations;
  for (let i = 0; i < n; i++) {
    globalThis.__ITER = i;
    fn(data);
  }
}
record.scenario = 'teardown';
globalThis.__VU = 0;
if (script.teardown) {
  script.teardown(data);
}
console.log(JSON.stringify(record));

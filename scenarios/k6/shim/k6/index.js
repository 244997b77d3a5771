// The shim of k6's own module. sleep really sleeps (K6_SLEEP_SCALE multiplies it: 0 skips
// every pause); check records each condition's passes and fails for the runner to report.
import { record } from './record.js';

const scale = Number(process.env.K6_SLEEP_SCALE ?? '1');
const pause = new Int32Array(new SharedArrayBuffer(4));

export function sleep(seconds) {
  const ms = seconds * 1000 * scale;
  if (ms > 0) {
    Atomics.wait(pause, 0, 0, ms);
  }
}

export function check(value, conditions) {
  let all = true;
  for (const [name, cond] of Object.entries(conditions)) {
    const ok = Boolean(typeof cond === 'function' ? cond(value) : cond);
    const c = (record.checks[name] ??= { passes: 0, fails: 0 });
    if (ok) {
      c.passes++;
    } else {
      c.fails++;
      all = false;
    }
  }
  return all;
}

export function group(_name, fn) {
  return fn();
}

export function fail(message) {
  throw new Error(message);
}

export default { sleep, check, group, fail };

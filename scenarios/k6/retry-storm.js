// The retry-storm scenario for k6: steady load on one event while the catalog hangs for a
// few seconds, with the clients' retry policy chosen by RETRY (none, naive, backoff).
//
//   k6 run -e BASE_URL=http://127.0.0.1:8080 -e RETRY=naive -e ADMIN_TOKEN=… \
//          -e CONTROL_URLS=http://127.0.0.1:8102,http://127.0.0.1:8202 scenarios/k6/retry-storm.js
//
// The script causes the outage itself through the catalog instances' control hooks
// (CONTROL_URLS): at 10s every request hangs past the clients' timeout, at 14s the catalog is
// healthy again. Compare amplification (attempts ÷ requests) and the share of requests that
// succeed after 14s between RETRY=naive and RETRY=backoff. Every request comes from k6's one
// address, so setup() raises api-per-ip for the run: naive retries would otherwise be cut
// by the per-address limit rather than pile onto the catalog. The catalog's knobs and the
// limit are read before the run and put back after it (setup, teardown).
import http from 'k6/http';
import { check, sleep } from 'k6';
import { Counter } from 'k6/metrics';
import { restoreEdits, restoreKnobs, saveEdits, saveKnobs, setKnobs, setLimitRate } from './lib/system.js';

const BASE_URL = __ENV.BASE_URL || 'http://127.0.0.1:8080';
const RETRY = __ENV.RETRY || 'none';
const RETRIES = parseInt(__ENV.RETRIES || '3', 10);

const requests = new Counter('requests');
const attempts = new Counter('attempts');
const succeeded = new Counter('succeeded');

// The backend the scenario assumes: 4 slots of 100ms per instance.
const healthy = { max_concurrent: 4, service_time_ms: 100 };
const hanging = { max_concurrent: 4, service_time_ms: 100, latency_ms: 30000 };

export const options = {
  scenarios: {
    clients: {
      executor: 'constant-arrival-rate',
      rate: 50,
      timeUnit: '1s',
      duration: '30s',
      preAllocatedVUs: 100,
      maxVUs: 600,
    },
    outage: {
      executor: 'per-vu-iterations',
      vus: 1,
      iterations: 1,
      startTime: '0s',
      exec: 'outage',
    },
  },
  thresholds: {
    // Every final answer is a success or the outage's failure, never a client error.
    checks: ['rate==1'],
  },
};

// setup reads the catalog's knobs and the per-address limit before the run changes them. An
// instance that does not answer stops the run here, before anything is changed.
export function setup() {
  const edits = saveEdits(['limit/api-per-ip']);
  const knobs = saveKnobs();
  try {
    setLimitRate('api-per-ip', '10000/s', 10000);
  } catch (err) {
    restoreEdits(edits);
    throw err;
  }
  return { edits, knobs };
}

// teardown puts back what setup read. k6 calls it after the scenarios end, and after a first
// Ctrl-C too.
export function teardown(data) {
  try {
    restoreKnobs(data.knobs);
  } finally {
    restoreEdits(data.edits);
  }
}

// outage sets the capacity, hangs the catalog from 10s to 14s, then puts it back.
export function outage() {
  setKnobs(healthy);
  sleep(10);
  setKnobs(hanging);
  sleep(4);
  setKnobs(healthy);
}

// pause is how long to wait before retry n (1 for the first): none for naive clients,
// exponential back-off with full jitter (100ms doubling, at most 2s) for the others.
function pause(n) {
  if (RETRY !== 'backoff') {
    return 0;
  }
  const ceiling = Math.min(0.1 * 2 ** (n - 1), 2);
  return Math.random() * ceiling;
}

export default function () {
  requests.add(1);
  const retries = RETRY === 'none' ? 0 : RETRIES;
  let res;
  for (let n = 0; n <= retries; n++) {
    if (n > 0) {
      sleep(pause(n));
    }
    attempts.add(1);
    res = http.get(`${BASE_URL}/v1/events/evt-flash`, { timeout: '500ms' });
    if (res.status >= 200 && res.status < 300) {
      succeeded.add(1);
      break;
    }
    if (res.status !== 0 && res.status !== 429 && res.status < 500) {
      break; // a client error would fail again
    }
  }
  check(res, {
    'the event is served, or the outage failed it (timeout, 429, 5xx)': (r) =>
      (r.status >= 200 && r.status < 300) || r.status === 0 || r.status === 429 || r.status >= 500,
  });
}

// The retry-storm scenario for k6: steady load on one event while the catalog hangs for a
// few seconds, with the clients' retry policy chosen by RETRY (none, naive, backoff).
//
//   k6 run -e BASE_URL=http://127.0.0.1:8080 -e RETRY=naive \
//          -e CONTROL_URLS=http://127.0.0.1:8102,http://127.0.0.1:8202 scenarios/k6/retry-storm.js
//
// With CONTROL_URLS (the catalog instances' base URLs) the script itself causes the outage
// through their control hooks: at 10s every request hangs past the clients' timeout, at 14s
// the catalog is healthy again. Compare amplification (attempts ÷ requests) and the share of
// requests that succeed after 14s between RETRY=naive and RETRY=backoff. The instances' knobs
// are read before the run and put back after it (setup, teardown), so the catalog does not
// stay throttled to the scenario's capacity.
import http from 'k6/http';
import { sleep } from 'k6';
import { Counter } from 'k6/metrics';

const BASE_URL = __ENV.BASE_URL || 'http://127.0.0.1:8080';
const RETRY = __ENV.RETRY || 'none';
const RETRIES = parseInt(__ENV.RETRIES || '3', 10);
const CONTROL_URLS = (__ENV.CONTROL_URLS || '').split(',').filter((u) => u !== '');

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
};

function putKnobs(url, body) {
  http.put(`${url}/control`, body, { headers: { 'Content-Type': 'application/json' } });
}

function setKnobs(knobs) {
  for (const url of CONTROL_URLS) {
    putKnobs(url, JSON.stringify(knobs));
  }
}

// setup reads each instance's knobs before the run changes them. An instance that does not
// answer stops the run here, before anything is changed that could not be put back.
export function setup() {
  const before = {};
  for (const url of CONTROL_URLS) {
    const res = http.get(`${url}/control`);
    if (res.status !== 200) {
      throw new Error(`GET ${url}/control answered ${res.status}: cannot read the knobs to put back`);
    }
    before[url] = res.body;
  }
  return { before };
}

// teardown puts back the knobs setup read. k6 calls it after the scenarios end, and after a
// first Ctrl-C too.
export function teardown(data) {
  for (const url of CONTROL_URLS) {
    putKnobs(url, data.before[url]);
  }
}

// outage sets the capacity, hangs the catalog from 10s to 14s, then puts it back.
export function outage() {
  if (CONTROL_URLS.length === 0) {
    return;
  }
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
  const ip = `10.3.${Math.floor(Math.random() * 250)}.${1 + Math.floor(Math.random() * 250)}`;
  const retries = RETRY === 'none' ? 0 : RETRIES;
  for (let n = 0; n <= retries; n++) {
    if (n > 0) {
      sleep(pause(n));
    }
    attempts.add(1);
    const res = http.get(`${BASE_URL}/v1/events/evt-flash`, { headers: { 'X-Forwarded-For': ip }, timeout: '500ms' });
    if (res.status >= 200 && res.status < 300) {
      succeeded.add(1);
      return;
    }
    if (res.status !== 0 && res.status !== 429 && res.status < 500) {
      return; // a client error would fail again
    }
  }
}

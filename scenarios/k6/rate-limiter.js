// The rate-limiter scenario for k6: a spike well above what the catalog serves, first without
// a limit, then with the scenario's own limit on the events route, on an open model
// (ramping-arrival-rate: requests start on schedule whether or not earlier ones returned, so
// latency is not hidden).
//
//   k6 run -e BASE_URL=http://127.0.0.1:8080 -e ADMIN_TOKEN=… \
//          -e CONTROL_URLS=http://127.0.0.1:8102,http://127.0.0.1:8202 scenarios/k6/rate-limiter.js
//
// setup() gives the catalog the scenario's capacity (two instances, 4 slots of 100ms each:
// about 80 requests a second) through CONTROL_URLS, creates the limit k6-rate-limiter
// (RATE a second for the whole route, default 40) and raises api-per-ip for the run: every
// request comes from k6's one address. At 36s the limit is put on the events route, before
// the second spike. teardown() puts the knobs, the route and the limits back as they were.
// Without the limit the catalog's queue grows past the clients' 2s timeout (or the gateway
// sheds with 503); with it the excess is answered 429 at once and accepted requests stay fast.
import http from 'k6/http';
import { check } from 'k6';
import { Counter, Rate, Trend } from 'k6/metrics';
import {
  putLimit, restoreEdits, restoreKnobs, routeLimits, saveEdits, saveKnobs, setKnobs, setLimitRate,
  setRouteLimits,
} from './lib/system.js';

const BASE_URL = __ENV.BASE_URL || 'http://127.0.0.1:8080';
const RATE = parseInt(__ENV.RATE || '40', 10);
const LIMIT = 'k6-rate-limiter';
const ROUTE = 'events';

const accepted = new Trend('accepted_duration', true);
const tooMany = new Counter('status_429');
// overloaded is the share of requests the backend's overload failed: timed out, or shed 503.
const overloaded = new Rate('overloaded');

const spike = [
  { target: 30, duration: '10s' }, // calm
  { target: 160, duration: '2s' }, // the spike arrives
  { target: 160, duration: '20s' },
  { target: 30, duration: '2s' },
];

export const options = {
  scenarios: {
    unlimited: {
      executor: 'ramping-arrival-rate', exec: 'request', startRate: 30, timeUnit: '1s',
      preAllocatedVUs: 50, maxVUs: 400, stages: spike,
    },
    limit: { executor: 'per-vu-iterations', exec: 'attachLimit', vus: 1, iterations: 1, startTime: '36s' },
    limited: {
      executor: 'ramping-arrival-rate', exec: 'request', startRate: 30, timeUnit: '1s',
      preAllocatedVUs: 50, maxVUs: 400, stages: spike, startTime: '38s',
    },
  },
  thresholds: {
    // Without a limit the spike overloads the catalog: some requests time out or are shed.
    'overloaded{scenario:unlimited}': ['rate>0.05'],
    // With the limit, the excess is refused at once and what is accepted is served in time.
    'status_429{scenario:limited}': ['count>0'],
    'overloaded{scenario:limited}': ['rate<0.01'],
    'accepted_duration{scenario:limited}': ['p(99)<500'],
  },
};

export function setup() {
  // The route is put back before the limit it names (restoreEdits goes last to first).
  const edits = saveEdits([`limit/${LIMIT}`, 'limit/api-per-ip', `route/${ROUTE}`]);
  const knobs = saveKnobs();
  try {
    setKnobs({ max_concurrent: 4, service_time_ms: 100 });
    putLimit({ id: LIMIT, key: 'route', algorithm: 'token_bucket', rate: `${RATE}/s`, burst: RATE / 2 });
    setLimitRate('api-per-ip', '10000/s', 10000);
    return { edits, knobs, routeLimits: routeLimits(ROUTE) };
  } catch (err) {
    restoreKnobs(knobs);
    restoreEdits(edits);
    throw err;
  }
}

export function teardown(data) {
  try {
    restoreKnobs(data.knobs);
  } finally {
    restoreEdits(data.edits);
  }
}

// attachLimit puts the scenario's limit on the events route, between the two spikes.
export function attachLimit(data) {
  setRouteLimits(ROUTE, [...data.routeLimits.filter((l) => l !== LIMIT), LIMIT]);
}

export function request() {
  const res = http.get(`${BASE_URL}/v1/events?limit=5`, {
    timeout: '2s',
    responseCallback: http.expectedStatuses({ min: 200, max: 299 }, 429),
  });
  overloaded.add(res.status === 0 || res.status === 503);
  if (res.status === 429) {
    tooMany.add(1);
  } else if (res.status >= 200 && res.status < 300) {
    accepted.add(res.timings.duration);
  }
  check(res, {
    'answered 2xx, 429, or failed by overload (timeout, 503)': (r) =>
      (r.status >= 200 && r.status < 300) || [0, 429, 503].includes(r.status),
    'a 429 names the limit it spent': (r) => r.status !== 429 || (r.json('violated-policies') || []).length > 0,
  });
}


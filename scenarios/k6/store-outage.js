// The store-outage scenario for k6: page views and logins through the gateway for a minute,
// while you stall and kill the rate limiter's Redis by hand and watch each rule do what it
// says without its store.
//
//   k6 run -e BASE_URL=http://127.0.0.1:8080 -e ADMIN_TOKEN=… scenarios/k6/store-outage.js
//
// While it runs, take Redis away and bring it back:
//   docker compose:  docker compose pause redis     then  docker compose unpause redis  (a stall)
//                    docker compose kill redis      then  docker compose start redis    (a death)
//   boxoffice up:    the playground's store-outage scenario does it to its own redis-server;
//                    with REDIS_URL, `redis-cli -u $REDIS_URL CLIENT PAUSE 10000 WRITE` stalls it.
// Page views fail open (the gateway decides alone, at limit / N): they keep answering 200 or
// 429. Logins fail closed: 503 while Redis is away, never another 5xx. The gateway's
// ratelimit_decisions_total{path} (Grafana: "Rate limiter decisions by path") shows the
// decisions leave the store for fallback and fail_closed, and come back.
// Every request comes from k6's one address, and each login is a different demo fan (240 in a
// minute), so setup() raises login-per-ip for the run: with Redis up, logins answer 200, and
// a 503 is the store's absence alone. teardown() puts it back.
import http from 'k6/http';
import { check } from 'k6';
import exec from 'k6/execution';
import { Counter } from 'k6/metrics';
import { restoreEdits, saveEdits, setLimitRate } from './lib/system.js';

const BASE_URL = __ENV.BASE_URL || 'http://127.0.0.1:8080';
const PASSWORD = __ENV.DEMO_PASSWORD || 'boxoffice-demo';

const tooMany = new Counter('status_429');
const unavailable = new Counter('status_503');
const otherErrors = new Counter('status_5xx_other');

export const options = {
  scenarios: {
    pages: {
      executor: 'constant-arrival-rate',
      exec: 'page',
      rate: 40,
      timeUnit: '1s',
      duration: '60s',
      preAllocatedVUs: 20,
      maxVUs: 200,
    },
    logins: {
      executor: 'constant-arrival-rate',
      exec: 'login',
      rate: 4,
      timeUnit: '1s',
      duration: '60s',
      preAllocatedVUs: 5,
      maxVUs: 50,
    },
  },
  thresholds: {
    // The lesson in one line: whatever Redis does, no 5xx but the logins' 503.
    status_5xx_other: ['count==0'],
    // Page views answer 2xx or 429, logins 200, 429 or 503 (see the checks).
    checks: ['rate==1'],
  },
};

export function setup() {
  const edits = saveEdits(['limit/login-per-ip']);
  try {
    setLimitRate('login-per-ip', '600/1m', 300);
  } catch (err) {
    restoreEdits(edits);
    throw err;
  }
  return { edits };
}

export function teardown(data) {
  restoreEdits(data.edits);
}

function count(res) {
  if (res.status === 429) {
    tooMany.add(1);
  } else if (res.status === 503) {
    unavailable.add(1);
  } else if (res.status >= 500) {
    otherErrors.add(1);
  }
}

export function page() {
  const res = http.get(`${BASE_URL}/v1/events?limit=5`, {
    timeout: '2s',
    responseCallback: http.expectedStatuses({ min: 200, max: 299 }, 429),
  });
  count(res);
  check(res, { 'page views fail open: 2xx or 429': (r) => (r.status >= 200 && r.status < 300) || r.status === 429 });
}

export function login() {
  // One fan after another (fan0001, fan0002, …): each account's own login limit stays unspent.
  const n = 1 + (exec.scenario.iterationInTest % 2000);
  const email = `fan${String(n).padStart(4, '0')}@boxoffice.test`;
  const res = http.post(`${BASE_URL}/v1/auth/login`, JSON.stringify({ email, password: PASSWORD }), {
    headers: { 'Content-Type': 'application/json' },
    timeout: '2s',
    responseCallback: http.expectedStatuses(200, 429, 503),
  });
  count(res);
  check(res, { 'logins fail closed: 200, 429 or 503': (r) => [200, 429, 503].includes(r.status) });
}

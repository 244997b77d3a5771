// The store-outage scenario for k6: page views and logins through the gateway for a minute,
// while you stall and kill the rate limiter's Redis by hand and watch each rule do what it
// says without its store.
//
//   k6 run -e BASE_URL=http://127.0.0.1:8080 scenarios/k6/store-outage.js
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
// Fake client IPs go in X-Forwarded-For, which the gateway believes only from its
// TRUSTED_PROXIES (the local `boxoffice up` trusts 127.0.0.1).
import http from 'k6/http';
import { check } from 'k6';
import { Counter } from 'k6/metrics';

const BASE_URL = __ENV.BASE_URL || 'http://127.0.0.1:8080';
const PASSWORD = __ENV.DEMO_PASSWORD || 'boxoffice-demo';
const ACCOUNTS = 5;

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
  },
};

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
  const ip = `10.7.${Math.floor(Math.random() * 20)}.1`;
  const res = http.get(`${BASE_URL}/v1/events?limit=5`, {
    headers: { 'X-Forwarded-For': ip },
    timeout: '2s',
    responseCallback: http.expectedStatuses({ min: 200, max: 299 }, 429),
  });
  count(res);
  check(res, { 'page views fail open: 2xx or 429': (r) => (r.status >= 200 && r.status < 300) || r.status === 429 });
}

export function login() {
  const n = 1 + Math.floor(Math.random() * ACCOUNTS);
  const email = `fan${String(10000 + n).slice(1)}@boxoffice.test`;
  const res = http.post(`${BASE_URL}/v1/auth/login`, JSON.stringify({ email, password: PASSWORD }), {
    headers: { 'Content-Type': 'application/json', 'X-Forwarded-For': `10.8.0.${n}` },
    timeout: '2s',
    responseCallback: http.expectedStatuses(200, 429, 503),
  });
  count(res);
  check(res, { 'logins fail closed: 200, 429 or 503': (r) => [200, 429, 503].includes(r.status) });
}

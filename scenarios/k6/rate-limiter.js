// The rate-limiter scenario for k6: a calm minute, then a spike well above what the catalog
// serves, on an open model (ramping-arrival-rate: requests are started on schedule whether or
// not earlier ones returned, so latency is not hidden).
//
//   k6 run -e BASE_URL=http://127.0.0.1:8080 scenarios/k6/rate-limiter.js
//
// Turn the gateway's limit on and off while it runs (the playground's knobs, or the admin
// API) and watch the 429 counter and the latency of accepted requests. Or shed instead: give
// the catalog a concurrency limit at the gateway and watch the 503 counter, e.g.
//   PATCH /admin/services/catalog {"max_in_flight": 64, "adaptive_concurrency": {"latency_target": "200ms"}}
// Fake client IPs go in X-Forwarded-For, which the gateway believes only from its TRUSTED_PROXIES (the local
// `boxoffice up` trusts 127.0.0.1).
import http from 'k6/http';
import { check } from 'k6';
import { Counter, Trend } from 'k6/metrics';

const BASE_URL = __ENV.BASE_URL || 'http://127.0.0.1:8080';

const accepted = new Trend('accepted_duration', true);
const tooMany = new Counter('status_429');
const unavailable = new Counter('status_503');

export const options = {
  scenarios: {
    spike: {
      executor: 'ramping-arrival-rate',
      startRate: 30,
      timeUnit: '1s',
      preAllocatedVUs: 50,
      maxVUs: 400,
      stages: [
        { target: 30, duration: '10s' }, // calm
        { target: 160, duration: '2s' }, // the spike arrives
        { target: 160, duration: '20s' },
        { target: 30, duration: '2s' },
        { target: 30, duration: '10s' },
      ],
    },
  },
  thresholds: {
    // Only failures the limiter did not decide: a 429 is an answer, not an error.
    'http_req_failed{expected_response:false}': ['rate<1'],
  },
};

export default function () {
  const ip = `10.2.${Math.floor(Math.random() * 250)}.${1 + Math.floor(Math.random() * 250)}`;
  const res = http.get(`${BASE_URL}/v1/events?limit=5`, {
    headers: { 'X-Forwarded-For': ip },
    timeout: '2s',
    responseCallback: http.expectedStatuses({ min: 200, max: 299 }, 429),
  });
  if (res.status === 429) {
    tooMany.add(1);
  } else if (res.status === 503) {
    unavailable.add(1);
  } else if (res.status >= 200 && res.status < 300) {
    accepted.add(res.timings.duration);
  }
  check(res, { 'answered 2xx or 429': (r) => (r.status >= 200 && r.status < 300) || r.status === 429 });
}

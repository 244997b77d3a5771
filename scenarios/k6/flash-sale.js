// The flash-sale scenario for k6: fans arrive at on-sale time, join the waiting room, poll it
// until admitted, hold a seat with the admission pass and order it.
//
//   k6 run -e BASE_URL=http://127.0.0.1:8080 -e ADMIN_TOKEN=… -e FANS=200 scenarios/k6/flash-sale.js
//
// Fans are told apart by their accounts, not their addresses: setup() logs FANS demo fans in
// (fan0001… share the demo password), and every request comes from k6's one address. So for
// the run setup() raises the per-address limits the scenario is not about (login-per-ip,
// api-per-ip: IP_RATE a second, default 1000), as 200 fans behind one network would need;
// teardown() puts them back. What the scenario shows is per account: the gateway answers 429
// to a fan's sixth hold attempt in a minute (holds-per-account), and inventory never sells a
// seat twice.
import http from 'k6/http';
import { check, sleep } from 'k6';
import exec from 'k6/execution';
import { Counter } from 'k6/metrics';
import { restoreEdits, saveEdits, setLimitRate } from './lib/system.js';

const BASE_URL = __ENV.BASE_URL || 'http://127.0.0.1:8080';
const EVENT = __ENV.EVENT || 'evt-flash';
const FANS = parseInt(__ENV.FANS || '200', 10);
const PASSWORD = __ENV.PASSWORD || 'boxoffice-demo';
const IP_RATE = parseInt(__ENV.IP_RATE || '1000', 10);

const admitted = new Counter('admitted');
const holds = new Counter('holds');
const orders = new Counter('orders');
const tooMany = new Counter('status_429');

export const options = {
  setupTimeout: '120s',
  scenarios: {
    fans: {
      executor: 'constant-arrival-rate',
      rate: 25,
      timeUnit: '1s',
      duration: '8s',
      preAllocatedVUs: 100,
      maxVUs: 300,
    },
  },
  thresholds: {
    // Fans get through: the waiting room admits them, and some hold a seat and order it.
    admitted: ['count>0'],
    orders: ['count>0'],
    // Every answer is one the flow expects (see the checks).
    checks: ['rate==1'],
  },
};

export function setup() {
  const edits = saveEdits(['limit/login-per-ip', 'limit/api-per-ip']);
  try {
    setLimitRate('login-per-ip', `${Math.max(FANS, 20)}/1m`, Math.max(FANS, 10));
    setLimitRate('api-per-ip', `${IP_RATE}/s`, 2 * IP_RATE);
    const fans = [];
    for (let i = 1; i <= FANS; i++) {
      const email = `fan${String(i).padStart(4, '0')}@boxoffice.test`;
      const res = http.post(`${BASE_URL}/v1/auth/login`, JSON.stringify({ email, password: PASSWORD }), {
        headers: { 'Content-Type': 'application/json' },
      });
      if (!check(res, { 'a demo fan logs in': (r) => r.status === 200 })) {
        throw new Error(`login as ${email} answered ${res.status}: ${res.body}`);
      }
      fans.push(res.json('access_token'));
    }
    return { edits, fans };
  } catch (err) {
    restoreEdits(edits);
    throw err;
  }
}

export function teardown(data) {
  restoreEdits(data.edits);
}

function headers(token, extra) {
  return Object.assign({ Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }, extra || {});
}

function count429(res) {
  if (res.status === 429) {
    tooMany.add(1, { policy: (res.json('violated-policies') || []).join(',') });
  }
}

export default function (data) {
  const token = data.fans[exec.scenario.iterationInTest % data.fans.length];
  let res = http.post(`${BASE_URL}/v1/events/${EVENT}/queue`, null, { headers: headers(token) });
  count429(res);
  if (!check(res, { 'the waiting room takes the fan': (r) => r.status === 200 })) {
    return;
  }
  let status = res.json();
  for (let waited = 0; status.status !== 'admitted' && waited < 30; waited++) {
    sleep(1);
    res = http.get(`${BASE_URL}/v1/events/${EVENT}/queue/me`, {
      headers: headers(token),
      responseCallback: http.expectedStatuses(200, 429),
    });
    count429(res);
    check(res, { 'the waiting room tells the fan its place': (r) => r.status === 200 || r.status === 429 });
    if (res.status === 200) {
      status = res.json();
    }
  }
  if (status.status !== 'admitted') {
    return;
  }
  admitted.add(1);

  // Pick seats at random, as fans clicking a seat map do; a 409 means someone was faster.
  for (let attempt = 0; attempt < 4; attempt++) {
    const seat = `A-${1 + Math.floor(Math.random() * 10)}-${1 + Math.floor(Math.random() * 20)}`;
    res = http.post(`${BASE_URL}/v1/events/${EVENT}/holds`, JSON.stringify({ seats: [seat] }), {
      headers: headers(token, { 'X-Admission-Pass': status.pass }),
      responseCallback: http.expectedStatuses(201, 409, 429),
    });
    count429(res);
    check(res, { 'a hold is placed, lost to a faster fan, or refused by the limit': (r) => [201, 409, 429].includes(r.status) });
    if (res.status === 201) {
      holds.add(1);
      const hold = res.json();
      const order = http.post(`${BASE_URL}/v1/orders`, JSON.stringify({ hold_id: hold.id }), {
        headers: headers(token, { 'Idempotency-Key': `k6-${hold.id}` }),
      });
      count429(order);
      if (check(order, { 'the held seat is ordered': (r) => r.status === 201 || r.status === 200 })) {
        orders.add(1);
      }
      return;
    }
    if (res.status !== 409) {
      return;
    }
  }
}

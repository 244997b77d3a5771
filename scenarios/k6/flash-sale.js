// The flash-sale scenario for k6: fans arrive at on-sale time, join the waiting room, poll it
// until admitted, hold a seat with the admission pass and order it.
//
//   k6 run -e BASE_URL=http://127.0.0.1:8080 -e EVENT=evt-flash -e FANS=200 scenarios/k6/flash-sale.js
//
// setup() logs FANS demo fans in (fan0001… share the demo password), each from its own fake
// IP so the per-IP login limit is not what stops them. The gateway answers 429 to a fan's
// sixth hold attempt in a minute (holds-per-account); inventory never sells a seat twice.
import http from 'k6/http';
import { sleep } from 'k6';
import { Counter } from 'k6/metrics';

const BASE_URL = __ENV.BASE_URL || 'http://127.0.0.1:8080';
const EVENT = __ENV.EVENT || 'evt-flash';
const FANS = parseInt(__ENV.FANS || '200', 10);
const PASSWORD = __ENV.PASSWORD || 'boxoffice-demo';

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
};

function fanIP(i) {
  return `10.4.${Math.floor(i / 250)}.${1 + (i % 250)}`;
}

export function setup() {
  const fans = [];
  for (let i = 1; i <= FANS; i++) {
    const email = `fan${String(i).padStart(4, '0')}@boxoffice.test`;
    const res = http.post(`${BASE_URL}/v1/auth/login`, JSON.stringify({ email, password: PASSWORD }), {
      headers: { 'Content-Type': 'application/json', 'X-Forwarded-For': fanIP(i) },
    });
    if (res.status === 200) {
      fans.push({ token: res.json('access_token'), ip: fanIP(i) });
    }
  }
  return { fans };
}

function headers(fan, extra) {
  return Object.assign({ Authorization: `Bearer ${fan.token}`, 'X-Forwarded-For': fan.ip, 'Content-Type': 'application/json' }, extra || {});
}

function count429(res) {
  if (res.status === 429) {
    tooMany.add(1, { policy: (res.json('violated-policies') || []).join(',') });
  }
}

export default function (data) {
  if (data.fans.length === 0) {
    return;
  }
  const fan = data.fans[(__ITER + __VU * 1000) % data.fans.length];
  let res = http.post(`${BASE_URL}/v1/events/${EVENT}/queue`, null, { headers: headers(fan) });
  count429(res);
  if (res.status !== 200) {
    return;
  }
  let status = res.json();
  for (let waited = 0; status.status !== 'admitted' && waited < 30; waited++) {
    sleep(1);
    res = http.get(`${BASE_URL}/v1/events/${EVENT}/queue/me`, { headers: headers(fan) });
    count429(res);
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
      headers: headers(fan, { 'X-Admission-Pass': status.pass }),
    });
    count429(res);
    if (res.status === 201) {
      holds.add(1);
      const hold = res.json();
      const order = http.post(`${BASE_URL}/v1/orders`, JSON.stringify({ hold_id: hold.id }), {
        headers: headers(fan, { 'Idempotency-Key': `k6-${hold.id}` }),
      });
      count429(order);
      if (order.status === 201 || order.status === 200) {
        orders.add(1);
      }
      return;
    }
    if (res.status !== 409) {
      return;
    }
  }
}

// The shim of k6/http: real HTTP requests, answered synchronously as k6's are. Node's fetch is
// asynchronous, so a worker thread makes each request while this thread waits on a shared
// flag (Atomics.wait) and then takes the answer off the worker's port.
import { MessageChannel, Worker, receiveMessageOnPort } from 'node:worker_threads';
import { record } from './record.js';

const { port1, port2 } = new MessageChannel();
const done = new Int32Array(new SharedArrayBuffer(4));
const worker = new Worker(new URL('./fetch.js', import.meta.url), {
  workerData: { port: port2, done },
  transferList: [port2],
});
worker.unref();

// A duration as k6 reads it: milliseconds as a number, or a string such as "500ms" or "2s".
function millis(d, fallback) {
  if (d === undefined) {
    return fallback;
  }
  if (typeof d === 'number') {
    return d;
  }
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)$/.exec(d);
  if (!m) {
    throw new Error(`timeout ${JSON.stringify(d)}: want a number of milliseconds or e.g. "2s"`);
  }
  return Number(m[1]) * { ms: 1, s: 1000, m: 60000 }[m[2]];
}

// expectedStatuses is k6's callback marking which answers are not failures: statuses and
// {min, max} ranges.
export function expectedStatuses(...want) {
  return {
    expected: (status) =>
      want.some((w) => (typeof w === 'number' ? status === w : status >= w.min && status <= w.max)),
  };
}

const defaultExpected = expectedStatuses({ min: 200, max: 399 });

function encode(body) {
  if (body === null || body === undefined) {
    return undefined;
  }
  if (typeof body === 'object') {
    return new URLSearchParams(body).toString();
  }
  return String(body);
}

// gjson-style path: "a.b.0.c".
function select(value, path) {
  let v = value;
  for (const part of String(path).split('.')) {
    if (v === null || v === undefined) {
      return undefined;
    }
    v = v[part];
  }
  return v;
}

export function request(method, url, body, params) {
  const p = params || {};
  const timeout = millis(p.timeout, 60000);
  const headers = { ...(p.headers || {}) };
  Atomics.store(done, 0, 0);
  port1.postMessage({ method, url, body: encode(body), headers, timeout });
  if (Atomics.wait(done, 0, 0, timeout + 5000) === 'timed-out') {
    throw new Error(`${method} ${url}: the fetch worker did not answer`);
  }
  const { message: a } = receiveMessageOnPort(port1);
  const callback = p.responseCallback === undefined ? defaultExpected : p.responseCallback;
  const expected = callback === null ? true : callback.expected(a.status);
  record.requests.push({ scenario: record.scenario, method, url, status: a.status, expected, error: a.error });
  return {
    status: a.status,
    body: a.body,
    headers: a.headers,
    error: a.error,
    error_code: a.status === 0 ? 1000 : 0,
    url,
    request: { method, url, headers, body },
    timings: { duration: a.duration },
    json(selector) {
      const v = JSON.parse(a.body);
      return selector === undefined ? v : select(v, selector);
    },
  };
}

export function get(url, params) {
  return request('GET', url, null, params);
}
export function post(url, body, params) {
  return request('POST', url, body, params);
}
export function put(url, body, params) {
  return request('PUT', url, body, params);
}
export function patch(url, body, params) {
  return request('PATCH', url, body, params);
}
export function del(url, body, params) {
  return request('DELETE', url, body, params);
}

// batch makes the requests one after the other (k6 makes them in parallel): what a batch
// answers is the same, only its timing differs.
export function batch(requests) {
  const one = (r) => {
    if (typeof r === 'string') {
      return get(r);
    }
    if (Array.isArray(r)) {
      return request(r[0], r[1], r[2], r[3]);
    }
    return request(r.method, r.url, r.body, r.params);
  };
  if (Array.isArray(requests)) {
    return requests.map(one);
  }
  return Object.fromEntries(Object.entries(requests).map(([k, r]) => [k, one(r)]));
}

export default { request, get, post, put, patch, del, batch, expectedStatuses };

// The worker of the k6/http shim: makes each request it is sent, posts the answer back and
// wakes the waiting thread. A request that fails or times out answers status 0, as in k6.
import { workerData } from 'node:worker_threads';

const { port, done } = workerData;

// k6 names headers in canonical form: Content-Type, Retry-After.
function canonical(name) {
  return name.replace(/(^|-)([a-z])/g, (_, dash, c) => dash + c.toUpperCase());
}

port.on('message', async (req) => {
  const started = performance.now();
  let answer;
  try {
    const res = await fetch(req.url, {
      method: req.method,
      headers: req.headers,
      body: req.body,
      signal: AbortSignal.timeout(req.timeout),
    });
    const headers = {};
    res.headers.forEach((v, k) => {
      headers[canonical(k)] = v;
    });
    answer = { status: res.status, body: await res.text(), headers };
  } catch (err) {
    answer = { status: 0, body: null, headers: {}, error: String(err.cause || err) };
  }
  answer.duration = performance.now() - started;
  port.postMessage(answer);
  Atomics.store(done, 0, 1);
  Atomics.notify(done, 0);
});

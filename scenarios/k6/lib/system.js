// What a scenario changes in the running system, and how it puts it back: the gateway's
// limits and routes through its admin API (ADMIN_URL, ADMIN_TOKEN), the services' knobs
// through their control hooks (CONTROL_URLS). A script reads what is in force in setup(),
// changes it, and puts it back in teardown(), as the playground does with its runs.
import http from 'k6/http';

const ADMIN_URL = __ENV.ADMIN_URL || 'http://127.0.0.1:9080';
const ADMIN_TOKEN = __ENV.ADMIN_TOKEN || '';

function admin(method, path, body) {
  return http.request(method, `${ADMIN_URL}${path}`, body === undefined ? null : JSON.stringify(body), {
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
    responseCallback: http.expectedStatuses({ min: 200, max: 299 }, 404),
  });
}

function must(res, what) {
  if (res.status < 200 || res.status > 299) {
    throw new Error(`${what} answered ${res.status}: ${res.body}`);
  }
  return res;
}

// saveEdits reads the gateway's stored edits of the elements named "kind/id" (kind limit,
// route or service), before the run changes them; null for one as the policy file has it.
export function saveEdits(names) {
  if (ADMIN_TOKEN === '') {
    throw new Error(`ADMIN_TOKEN is not set: the scenario changes the gateway's limits through its admin API (${ADMIN_URL})`);
  }
  const edits = must(admin('GET', '/admin/edits'), 'GET /admin/edits').json('edits') || [];
  const saved = [];
  for (const name of names) {
    const [kind, id] = name.split('/');
    saved.push({ kind, id, prior: edits.find((e) => e.kind === kind && e.id === id) || null });
  }
  return saved;
}

// restoreEdits puts back what saveEdits read, the last named first (a route before the limit
// it names). An element that had no edit follows the policy file again: its edit is dropped,
// not overwritten with the file's value, which would hide the file's later changes.
export function restoreEdits(saved) {
  const failed = [];
  for (const { kind, id, prior } of [...saved].reverse()) {
    let res;
    if (prior === null) {
      res = admin('DELETE', `/admin/edits/${kind}/${id}`);
    } else if (prior.deleted) {
      res = admin('DELETE', `/admin/${kind}s/${id}`);
    } else {
      res = admin('PUT', `/admin/${kind}s/${id}`, prior.value);
    }
    if ((res.status < 200 || res.status > 299) && res.status !== 404) {
      failed.push(`${kind} ${id}: ${res.status} ${res.body}`);
    }
  }
  if (failed.length > 0) {
    throw new Error(`could not put back the gateway's ${failed.join('; ')}`);
  }
}

// putLimit creates or replaces a gateway limit.
export function putLimit(limit) {
  must(admin('PUT', `/admin/limits/${limit.id}`, limit), `PUT /admin/limits/${limit.id}`);
}

// setLimitRate gives an existing limit another rate and burst, its key and algorithm kept.
export function setLimitRate(id, rate, burst) {
  const limit = must(admin('GET', `/admin/limits/${id}`), `GET /admin/limits/${id}`).json();
  putLimit(Object.assign(limit, { rate, burst }));
}

// routeLimits is the list of limits a route spends.
export function routeLimits(id) {
  return must(admin('GET', `/admin/routes/${id}`), `GET /admin/routes/${id}`).json('limits') || [];
}

// setRouteLimits replaces a route's list of limits.
export function setRouteLimits(id, limits) {
  must(admin('PATCH', `/admin/routes/${id}`, { limits }), `PATCH /admin/routes/${id}`);
}

// controlURLs are the base URLs of the instances whose knobs the scenario turns.
export const controlURLs = (__ENV.CONTROL_URLS || '').split(',').filter((u) => u !== '');

// saveKnobs reads each instance's knobs. One that does not answer stops the run here, before
// anything is changed that could not be put back.
export function saveKnobs() {
  const before = {};
  for (const url of controlURLs) {
    before[url] = must(http.get(`${url}/control`), `GET ${url}/control`).body;
  }
  return before;
}

// setKnobs puts knobs (an object, or the JSON saveKnobs read) on every instance.
export function setKnobs(knobs, url) {
  for (const u of url === undefined ? controlURLs : [url]) {
    const body = typeof knobs === 'string' ? knobs : JSON.stringify(knobs);
    must(http.put(`${u}/control`, body, { headers: { 'Content-Type': 'application/json' } }), `PUT ${u}/control`);
  }
}

// restoreKnobs puts back what saveKnobs read.
export function restoreKnobs(before) {
  for (const [url, knobs] of Object.entries(before)) {
    setKnobs(knobs, url);
  }
}

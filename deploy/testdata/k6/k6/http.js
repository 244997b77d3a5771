// A stand-in for k6/http. The control hooks of the services (PUT or GET <base>/control) are
// kept in `hooks`, base URL → knobs, which the harness fills before the run and reads after
// it; every other request answers 200 with an empty JSON object. A write to the gateway's
// admin API throws: it is not modelled, so a script that changes knobs there needs this
// stand-in taught first.
export const hooks = new Map();
export let writes = 0;

function response(status, body) {
  return {
    status,
    body,
    timings: { duration: 1 },
    json(selector) {
      const v = JSON.parse(body);
      return selector === undefined ? v : v[selector];
    },
  };
}

function request(method, url, body) {
  const control = url.match(/^(.*)\/control$/);
  if (control) {
    const base = control[1];
    if (!hooks.has(base)) {
      throw new Error(`${method} ${url}: no such control hook (the run's CONTROL_URLS are ${[...hooks.keys()]})`);
    }
    if (method === 'PUT') {
      hooks.set(base, JSON.parse(body));
      writes++;
    } else if (method !== 'GET') {
      throw new Error(`${method} ${url}: a control hook answers GET and PUT only`);
    }
    return response(200, JSON.stringify(hooks.get(base)));
  }
  if (method !== 'GET' && /\/admin\//.test(url)) {
    throw new Error(`${method} ${url}: the gateway's admin API is not modelled here; teach k6/http.js before a script changes knobs there`);
  }
  return response(200, '{}');
}

export function get(url) {
  return request('GET', url);
}
export function post(url, body) {
  return request('POST', url, body);
}
export function put(url, body) {
  return request('PUT', url, body);
}
export function patch(url, body) {
  return request('PATCH', url, body);
}
export function del(url, body) {
  return request('DELETE', url, body);
}
export function expectedStatuses() {
  return null;
}

export default { get, post, put, patch, del, request, expectedStatuses };

// api.js calls the playground's JSON API. Errors arrive as application/problem+json; the
// thrown Error carries the problem's detail, which is written for the person at the keyboard.

export async function getJSON(path) {
  return answer(await fetch(path, { headers: { Accept: "application/json" } }));
}

export async function postJSON(path, body) {
  return answer(await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: JSON.stringify(body ?? {}),
  }));
}

async function answer(resp) {
  const text = await resp.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch { /* not JSON: reported below */ }
  if (!resp.ok) {
    const where = body?.field ? `${body.field}: ` : "";
    throw new Error(where + (body?.detail ?? `${resp.status} ${resp.statusText}`));
  }
  return body;
}

// api.js — fetch wrappers that always give back the protocol's error shape.
//
// Writes are JSON (the server refuses anything else, docs/DECISIONS.md D6); a network failure
// is reported as NETWORK_ERROR so the composer can show a code like every other failure.

export async function getJson(url) {
  const response = await fetch(url, { headers: { Accept: "application/json" }, cache: "no-store" });
  if (!response.ok) throw new Error(`${url} answered ${response.status}`);
  return response.json();
}

/** POST JSON. Resolves to {ok, status, data} or {ok: false, status, error: {code, message}}. */
export async function postJson(url, body) {
  let response;
  try {
    response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify(body),
    });
  } catch {
    return { ok: false, status: 0, error: { code: "NETWORK_ERROR", message: "GroupX could not be reached" } };
  }
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (response.ok) return { ok: true, status: response.status, data };
  const error = data && data.error && typeof data.error.code === "string"
    ? data.error
    : { code: `HTTP_${response.status}`, message: response.statusText || "the request failed" };
  return { ok: false, status: response.status, error };
}

// api.js — fetch wrappers that always give back the protocol's error shape.
//
// Writes are JSON (the server refuses anything else, docs/DECISIONS.md D6); a network failure
// is reported as NETWORK_ERROR so the composer can show a code like every other failure.
//
// What the page sends and reads is named by its schema in /api/openapi.json: each typedef below is
// `#/components/schemas/<Name>` of that document (docs/DECISIONS.md D34), and the call sites cast
// to these names; tests/test_api_schemas.py resolves every name and validates real answers by it.

import { format, gettext } from "./i18n.js";

/**
 * @typedef {object} ErrorBody             #/components/schemas/ErrorBody
 * @typedef {object} PostMessageBody       #/components/schemas/PostMessageBody
 * @typedef {object} PostMessageAccepted   #/components/schemas/PostMessageAccepted
 * @typedef {object} CancelBody            #/components/schemas/CancelBody
 * @typedef {object} CancelAccepted        #/components/schemas/CancelAccepted
 * @typedef {object} Bootstrap             #/components/schemas/Bootstrap
 * @typedef {object} Envelope              #/components/schemas/Envelope
 * @typedef {object} EventsPage            #/components/schemas/EventsPage
 * @typedef {object} SearchPage            #/components/schemas/SearchPage
 * @typedef {object} HealthReport          #/components/schemas/HealthReport
 * @typedef {object} ContextUsage          #/components/schemas/ContextUsage
 * @typedef {object} CompactBody           #/components/schemas/CompactBody
 * @typedef {object} CompactResult         #/components/schemas/CompactResult
 * @typedef {object} MemoryPage            #/components/schemas/MemoryPage
 * @typedef {object} MemoryWriteBody       #/components/schemas/MemoryWriteBody
 * @typedef {object} MemorySupersedeBody   #/components/schemas/MemorySupersedeBody
 * @typedef {object} RetractBody           #/components/schemas/RetractBody
 * @typedef {object} MemoryResult          #/components/schemas/MemoryResult
 * @typedef {object} SetupSnapshot         #/components/schemas/SetupSnapshot
 * @typedef {object} SetupSaveBody         #/components/schemas/SetupSaveBody
 * @typedef {object} SetupSaved            #/components/schemas/SetupSaved
 */

export async function getJson(url) {
  const response = await fetch(url, { headers: { Accept: "application/json" }, cache: "no-store" });
  if (!response.ok) throw new Error(format(gettext("%(url)s answered %(status)s"), { url, status: response.status }));
  return response.json();
}

/** POST JSON. Resolves to {ok, status, data} or {ok: false, status, error: ErrorBody["error"]}. */
export async function postJson(url, body) {
  let response;
  try {
    response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify(body),
    });
  } catch {
    return { ok: false, status: 0, error: { code: "NETWORK_ERROR", message: gettext("GroupX could not be reached") } };
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
    : { code: `HTTP_${response.status}`, message: response.statusText || gettext("the request failed") };
  return { ok: false, status: response.status, error };
}

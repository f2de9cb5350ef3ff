// storage.js — the page's remembered choices in localStorage, never an error when it is off.
//
// Storage can be disabled or full (a private window, a policy): the page then works and forgets.

export function loadSetting(key) {
  try {
    return localStorage.getItem(key);
  } catch {
    return null;
  }
}

/** Remember ``value`` under ``key``; null forgets it. */
export function saveSetting(key, value) {
  try {
    if (value === null) localStorage.removeItem(key);
    else localStorage.setItem(key, value);
  } catch {
    /* storage full or disabled */
  }
}

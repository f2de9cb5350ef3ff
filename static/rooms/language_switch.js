// language_switch.js — the room's and /setup's language button: the other language, named in it.
//
// The choice is Django's language cookie (the server reads it before Accept-Language, so it
// holds across reloads and for /setup too); a reload renders the page and its catalog in it.
// A cookie rather than Django's set_language form: the pages' no-referrer policy makes Chromium
// post forms with `Origin: null`, which the CSRF check refuses (docs/DECISIONS.md D123).

const COOKIE = "django_language";
const YEAR_SECONDS = 365 * 24 * 3600;

export function chooseLanguage(code) {
  document.cookie = `${COOKIE}=${encodeURIComponent(code)}; path=/; max-age=${YEAR_SECONDS}; SameSite=Lax`;
  window.location.reload();
}

for (const button of document.querySelectorAll("button.lang-switch[data-language]")) {
  button.addEventListener("click", () => chooseLanguage(button.dataset.language));
}

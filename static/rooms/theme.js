// theme.js — a classic (blocking) script in <head>: apply the saved theme before first paint,
// so a dark-theme user never sees a white flash. The toggle itself lives in room.js.
(function () {
  try {
    var saved = localStorage.getItem("groupx.theme");
    if (saved === "light" || saved === "dark") document.documentElement.dataset.theme = saved;
  } catch (e) {
    /* storage may be disabled: follow the system preference */
  }
})();

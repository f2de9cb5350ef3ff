// more_menu.js — the phone's "⋯" menu (phone.css): Search, Export, Settings, Admin, API docs.
//
// A <details>, so it opens by click, Enter or Space with no script; this adds what a menu is
// expected to do besides: Escape and a click elsewhere close it, and "Search messages" moves
// to the search box (which stays in the header on a phone).

export function wireMoreMenu(menu, searchInput) {
  if (!menu) return;
  const close = () => {
    if (menu.open) menu.open = false;
  };
  menu.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && menu.open) {
      close();
      menu.querySelector("summary").focus();
    }
  });
  document.addEventListener("click", (event) => {
    if (!menu.contains(event.target)) close();
  });
  menu.querySelector("#more-search").addEventListener("click", () => {
    close();
    searchInput.focus();
  });
}

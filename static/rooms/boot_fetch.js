// boot_fetch.js — asks for GET /api/bootstrap as soon as the page's head is read, while the room's
// ES modules are still loading; room.js takes the promise for its first snapshot (and fetches again
// itself if this one failed). A classic script, not a module, so it does not wait for the graph.
window.groupxBootstrap = fetch("/api/bootstrap", { headers: { Accept: "application/json" }, cache: "no-store" })
  .then((response) => {
    if (!response.ok) throw new Error(`/api/bootstrap answered ${response.status}`);
    return response.json();
  });
window.groupxBootstrap.catch(() => { /* room.js reads it again */ });

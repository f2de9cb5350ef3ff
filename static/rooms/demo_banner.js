// The "You are running demo agents" banner (docs/DECISIONS.md D26). The template renders it hidden,
// only for the starter demo roster; it shows unless dismissed in this browser before, so a
// dismissed banner does not flash on every reload. A classic script: the room's modules never
// need it, and a page without the banner never loads it.
"use strict";

(() => {
  const KEY = "groupx.demoBanner.dismissed";
  const banner = document.getElementById("demo-banner");
  if (!banner) return;
  const remembered = () => {
    try {
      return localStorage.getItem(KEY) === "1";
    } catch {
      return false; // storage refused (a private window's policy): show it, dismiss for this page only
    }
  };
  banner.hidden = remembered();
  banner.querySelector(".demo-banner-close").addEventListener("click", () => {
    banner.hidden = true;
    try {
      localStorage.setItem(KEY, "1");
    } catch {
      // nothing to remember it in: it comes back on the next load
    }
  });
})();

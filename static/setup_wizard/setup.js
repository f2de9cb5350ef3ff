// Agent Settings (/setup): edit the groupx.json draft from GET /api/setup and save it with POST.
// It is always served by a running room (the first run writes a starter config instead of a
// wizard: docs/DECISIONS.md D26), so a save takes effect at `groupx restart`. CLIs found on PATH
// are shown open; the ones that are not are folded away.
// Vanilla JS, no inline code (the CSP forbids it); text is always set as text, never as HTML.
// Its sentences come from Django's JavaScript catalog in the reader's language (../rooms/i18n.js).

import { format, gettext, ngettext } from "../rooms/i18n.js";

(() => {
  const $ = (id) => document.getElementById(id);
  let snapshot = null;
  let saving = false;
  let savedAgentIds = new Set(); // the agents of the file as saved: a card's Test runs its own command
  let savedPort = null; // the port in the file as saved: a restart moves the room there

  function el(tag, props = {}, children = []) {
    const node = document.createElement(tag);
    Object.assign(node, props);
    for (const child of children) node.append(child);
    return node;
  }

  function showBanner(text, kind) {
    const banner = $("banner");
    banner.textContent = text;
    banner.className = `banner ${kind || ""}`;
    banner.hidden = !text;
  }

  // The driver names, in the server's order: the snapshot's driverChoices (groupx_site/core/driver_table.py).
  function driverNames() {
    return ((snapshot && snapshot.driverChoices) || []).map((d) => d.name);
  }

  function fillDriverSelect(select, value) {
    const names = driverNames();
    select.replaceChildren(...names.map((d) => el("option", { value: d, textContent: d })));
    select.value = value || names[0];
  }

  // --- rendering ------------------------------------------------------------------------------

  function installHint(driver) {
    const choice = ((snapshot && snapshot.driverChoices) || []).find((d) => d.name === driver);
    return (choice && choice.installHint) || format(gettext("see the vendor's documentation for %(driver)s"), { driver });
  }

  // Test: the CLI's --version and its native handshake, run by the server (POST /api/setup/test-cli)
  // on the CLI it found on PATH, or on a saved agent's own command; the page names a driver or an
  // agent, never a command.
  async function testCli(target, name, button, result) {
    button.disabled = true;
    result.className = "cli-result";
    result.textContent = format(gettext("Testing %(driver)s…"), { driver: name });
    try {
      const response = await fetch("/api/setup/test-cli", {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(target),
      });
      const body = await response.json();
      if (!response.ok) throw new Error((body.error && body.error.message) || `HTTP ${response.status}`);
      const version = body.version ? format(gettext("version %(version)s"), { version: body.version })
        : gettext("no --version output");
      const shake = body.handshake.ok ? gettext("handshake ok")
        : format(gettext("handshake failed: %(code)s: %(message)s"), body.handshake);
      result.textContent = body.found ? `${version}; ${shake}`
        : format(gettext("not found on PATH; install: %(hint)s"), { hint: body.installHint });
      result.classList.add(body.found && body.handshake.ok ? "ok" : "failed");
    } catch (error) {
      result.textContent = format(gettext("The test could not run: %(reason)s"), { reason: error.message });
      result.classList.add("failed");
    } finally {
      button.disabled = false;
    }
  }

  function renderDrivers(drivers) {
    const item = (d) => {
      if (!d.found) {
        return el("li", { className: "missing" }, [
          el("strong", { textContent: d.driver }), ` ${gettext("not found on PATH.")} `,
          el("span", { className: "install-hint",
            textContent: format(gettext("Install: %(hint)s"), { hint: installHint(d.driver) }) }),
        ]);
      }
      const result = el("span", { className: "cli-result", role: "status" });
      const button = el("button", { type: "button", className: "test-cli", textContent: gettext("Test") });
      button.setAttribute("aria-label", format(gettext("Test %(driver)s"), { driver: d.driver }));
      button.addEventListener("click", () => testCli({ driver: d.driver }, d.driver, button, result));
      return el("li", { className: "found" }, [
        el("strong", { textContent: d.driver }), ` ${d.command}${d.version ? ` (${d.version})` : ""} `,
        button, " ", result,
      ]);
    };
    const found = drivers.filter((d) => d.found);
    const missing = drivers.filter((d) => !d.found);
    $("drivers").replaceChildren(...(found.length ? found.map(item)
      : [el("li", { className: "none", textContent: gettext("No agent CLI found on PATH: the demo agents stand in.") })]));
    $("missing-driver-list").replaceChildren(...missing.map(item));
    $("missing-drivers").hidden = missing.length === 0;
  }

  // A card that runs a bare CLI name this machine does not have (the first-run draft lists all
  // five drivers) could not start: it goes in the folded group, out of the way but still saved.
  function undetected(agent) {
    const executable = (agent.command && agent.command.executable) || "";
    const missing = new Set(((snapshot && snapshot.drivers) || []).filter((d) => !d.found).map((d) => d.driver));
    return !/[/\\]/.test(executable) && missing.has(executable);
  }

  function agentCard(agent) {
    const card = $("agent-template").content.firstElementChild.cloneNode(true);
    const field = (name) => card.querySelector(`[name="${name}"]`);
    fillDriverSelect(field("driver"), agent.driver);
    field("id").value = agent.id || "";
    field("name").value = agent.name || "";
    field("executable").value = (agent.command && agent.command.executable) || "";
    field("entrypoint").value = (agent.command && agent.command.prefixArgs && agent.command.prefixArgs[0]) || "";
    field("cwd").value = agent.cwd || "";
    field("identity").value = agent.identity || "";
    field("enabled").checked = agent.enabled !== false;
    card.querySelector(".remove").addEventListener("click", () => { card.remove(); renumber(); });
    card.querySelector(".test-cli").addEventListener("click", () => testCard(card));
    field("id").addEventListener("input", () => renumber());
    // One error line inside each field's label (so the grid keeps its shape), filled by path.
    for (const name of ["id", "driver", "name", "executable", "cwd", "identity"]) {
      field(name).closest("label").append(el("span", { className: "field-error" }));
    }
    return card;
  }

  // A card's Test: a saved agent runs its own command and folder; an unsaved one, its driver's
  // CLI from PATH (the server only runs what the file or the driver table names).
  function testCard(card) {
    const id = card.querySelector('[name="id"]').value.trim();
    const driver = card.querySelector('[name="driver"]').value;
    const target = savedAgentIds.has(id) ? { agentId: id } : { driver };
    testCli(target, savedAgentIds.has(id) ? `agent:${id}` : driver, card.querySelector(".test-cli"),
      card.querySelector(".cli-result"));
  }

  // Paths in errors are positional (config.agents.2.cwd), so they follow the cards' order.
  function renumber() {
    document.querySelectorAll("#agents .agent").forEach((card, index) => {
      const at = `config.agents.${index}`;
      const id = card.querySelector('[name="id"]').value.trim();
      card.querySelector("legend").textContent = id ? `agent:${id}` : gettext("new agent");
      card.querySelector(".test-cli").setAttribute("aria-label",
        format(gettext("Test %(driver)s"), { driver: id ? `agent:${id}` : gettext("new agent") }));
      card.dataset.path = at;
      card.querySelector(":scope > .field-error").dataset.errorFor = at;
      for (const input of card.querySelectorAll("[name]")) {
        const name = input.name === "executable" || input.name === "entrypoint" ? "command" : input.name;
        input.dataset.path = `${at}.${name}`;
        const error = input.closest("label").querySelector(".field-error");
        if (error) error.dataset.errorFor = `${at}.${name}`;
      }
    });
  }

  function renderAgents(agents) {
    const folded = agents.filter(undetected);
    const cards = agents.filter((agent) => !undetected(agent)).map(agentCard);
    if (folded.length) {
      cards.push(el("details", { className: "collapsed-group agents-undetected" }, [
        el("summary", { textContent: format(gettext("Other agents (not found on PATH): %(count)s"),
          { count: folded.length }) }),
        ...folded.map(agentCard),
      ]));
    }
    $("agents").replaceChildren(...cards);
    renumber();
  }

  function renderDemoPicker(demos) {
    const picker = $("demo-picker");
    picker.replaceChildren(el("option", { value: "", textContent: gettext("Add a demo agent…") }),
      ...demos.map((d, i) => el("option", { value: String(i), textContent: `${d.name} (${d.driver})` })));
    picker.hidden = demos.length === 0;
  }

  function renderAssistant(assistant) {
    const a = assistant || { enabled: false, name: "房间助理", brain: null, extraInstructions: "" };
    const brain = a.brain || {};
    $("assistant-enabled").checked = !!a.enabled;
    $("assistant-name").value = a.name || "";
    fillDriverSelect($("assistant-driver"), brain.driver);
    $("assistant-executable").value = (brain.command && brain.command.executable) || "";
    $("assistant-entrypoint").value = (brain.command && brain.command.prefixArgs && brain.command.prefixArgs[0]) || "";
    $("assistant-cwd").value = brain.cwd || "";
    $("assistant-extra").value = a.extraInstructions || "";
  }

  function render(data) {
    snapshot = data;
    $("intro").textContent = format(gettext("Editing %(path)s. Changes take effect after `groupx restart`."),
      { path: data.configPath });
    if (data.existingConfigError) {
      showBanner(format(gettext("The existing config could not be read, so this is a fresh draft: %(reason)s"),
        { reason: data.existingConfigError }), "warn");
    }
    renderDrivers(data.drivers);
    const draft = data.config;
    savedAgentIds = new Set(draft.agents.map((agent) => agent.id));
    savedPort = draft.serverPort;
    $("server-port").value = draft.serverPort;
    $("storage-path").value = draft.storagePath;
    renderAgents(draft.agents);
    renderDemoPicker(data.demoAgents || []);
    $("assistant").hidden = !data.assistantAvailable;
    if (data.assistantAvailable) renderAssistant(draft.assistant);
    $("setup-form").hidden = false;
  }

  // --- collecting the draft ---------------------------------------------------------------------

  function command(executable, entrypoint) {
    const exe = executable.trim();
    const script = entrypoint.trim();
    return { executable: exe, prefixArgs: script ? [script] : [] };
  }

  function collect() {
    const agents = [...document.querySelectorAll("#agents .agent")].map((card) => {
      const v = (name) => card.querySelector(`[name="${name}"]`);
      return {
        id: v("id").value.trim(),
        driver: v("driver").value,
        name: v("name").value.trim(),
        identity: v("identity").value,
        command: command(v("executable").value, v("entrypoint").value),
        cwd: v("cwd").value.trim(),
        enabled: v("enabled").checked,
      };
    });
    const port = Number.parseInt($("server-port").value, 10);
    const draft = {
      serverPort: Number.isNaN(port) ? $("server-port").value : port,
      storagePath: $("storage-path").value.trim(),
      agents,
    };
    // Without the card there is no assistant in the draft: the save keeps the file's own block.
    if (snapshot && snapshot.assistantAvailable) draft.assistant = collectAssistant();
    return draft;
  }

  function collectAssistant() {
    const executable = $("assistant-executable").value.trim();
    const cwd = $("assistant-cwd").value.trim();
    return {
      enabled: $("assistant-enabled").checked,
      name: $("assistant-name").value.trim(),
      extraInstructions: $("assistant-extra").value,
      brain: cwd ? {
        driver: $("assistant-driver").value,
        command: executable ? command(executable, $("assistant-entrypoint").value) : null,
        cwd,
      } : null,
    };
  }

  // --- errors next to their fields ----------------------------------------------------------

  function clearErrors() {
    for (const node of document.querySelectorAll(".field-error")) node.textContent = "";
    for (const node of document.querySelectorAll(".invalid")) node.classList.remove("invalid");
    $("other-errors").replaceChildren();
    $("other-errors").hidden = true;
  }

  // The element for the longest prefix of a path: config.agents.1.command.prefixArgs → …command.
  function nearest(attribute, path) {
    const parts = path.split(".");
    while (parts.length) {
      const node = document.querySelector(`[${attribute}="${CSS.escape(parts.join("."))}"]`);
      if (node) return node;
      parts.pop();
    }
    return null;
  }

  function showIssues(issues) {
    let firstInvalid = null;
    for (const issue of issues) {
      const slot = nearest("data-error-for", issue.path);
      if (!slot) {
        $("other-errors").append(el("li", { textContent: `${issue.path}: ${issue.message}` }));
        continue;
      }
      slot.textContent = slot.textContent ? `${slot.textContent} ${issue.message}` : issue.message;
      const input = nearest("data-path", issue.path);
      const folded = slot.closest("details");
      if (folded) folded.open = true; // an error inside the folded group must be seen
      if (input) {
        input.classList.add("invalid");
        firstInvalid = firstInvalid || input;
      }
    }
    $("other-errors").hidden = !$("other-errors").children.length;
    if (firstInvalid) firstInvalid.focus();
  }

  // --- restarting: what `groupx restart` does, from the page -----------------------------------

  const RESTART_WAIT_MS = 120_000;

  /** The room's address once GroupX listens on the saved port, or null while it stays on this one. */
  function movedOrigin() {
    const here = Number(window.location.port) || (window.location.protocol === "https:" ? 443 : 80);
    if (!savedPort || Number(savedPort) === here) return null;
    return `${window.location.protocol}//${window.location.hostname}:${savedPort}`;
  }

  /** A saved port change: this page cannot ask another port whether it is ready (its CSP allows
   * this origin only), so it says plainly where the room now is, with the links to go there. */
  function showMoved(origin) {
    showBanner(`${format(gettext("GroupX is starting again on port %(port)s: the room is now at %(url)s."),
      { port: savedPort, url: `${origin}/` })} `, "ok");
    const room = el("a", { href: `${origin}/`, textContent: gettext("Open the room there") });
    $("banner").append(room, " · ", el("a", { href: `${origin}/setup`, textContent: gettext("Agent settings there") }));
    room.focus();
  }

  /** Ask this runtime to stop and start again with the saved config, then wait until a fresh one
   * answers ready; the room's open pages reconnect by themselves. With a new port in the saved
   * file, the page shows where the room moved once this port goes quiet. */
  async function restartNow() {
    const button = $("restart-now");
    button.disabled = true;
    showBanner(gettext("Restarting GroupX…"), "ok");
    const moved = movedOrigin();
    try {
      const health = await (await fetch("/api/health", { cache: "no-store" })).json();
      const response = await fetch("/api/runtime/restart", {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ runtimeScopeKey: health.runtimeScopeKey }),
      });
      if (response.status !== 202) {
        throw new Error(format(gettext("the restart was refused (%(status)s)"), { status: response.status }));
      }
      const deadline = Date.now() + RESTART_WAIT_MS;
      let wentDown = false;
      while (Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 500));
        let state = "down";
        try {
          const answer = await fetch("/api/health", { cache: "no-store" });
          state = answer.ok ? (await answer.json()).readiness : "down";
        } catch { /* the port is released between the two runtimes */ }
        if (state !== "ready") {
          if (moved && !wentDown) showMoved(moved);
          wentDown = true;
        } else if (wentDown) { // back on this port after all (a port given on the command line wins)
          showBanner(`${gettext("GroupX restarted with the saved settings.")} `, "ok");
          $("banner").append(el("a", { href: "/", textContent: gettext("Back to the room") }));
          button.hidden = true;
          await load();
          return;
        }
      }
      if (moved && wentDown) return; // it moved: the banner says where
      throw new Error(gettext("GroupX did not come back within two minutes; look at the terminal that started it"));
    } catch (error) {
      showBanner(format(gettext("Restart failed: %(reason)s"), { reason: error.message }), "error");
    } finally {
      button.disabled = false;
    }
  }

  // --- saving -------------------------------------------------------------------------------

  async function save(event) {
    event.preventDefault();
    if (saving) return;
    saving = true;
    $("save").disabled = true;
    clearErrors();
    const draft = collect();
    try {
      const response = await fetch("/api/setup", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        // The revision read with the draft: a file changed since then is a 409, never overwritten.
        body: JSON.stringify(/** @type {SetupSaveBody} */ ({ config: draft, revision: snapshot.revision })),  // #/components/schemas/SetupSaveBody
      });
      const body = await response.json();  // SetupSaved (#/components/schemas/SetupSaved) or ErrorBody
      if (response.ok) {
        snapshot.revision = body.revision;  // the next save is made from the file just written
        savedAgentIds = new Set(draft.agents.map((agent) => agent.id));
        savedPort = draft.serverPort;
        const saved = format(ngettext("Saved %(count)s agent (%(enabled)s enabled).",
          "Saved %(count)s agents (%(enabled)s enabled).", body.agentCount),
        { count: body.agentCount, enabled: body.enabledAgentCount });
        const next = gettext(
          "Run `groupx restart` (or press Restart GroupX now, below) to start new or changed agents; until then new ones show as pending restart.");
        showBanner(`${saved} ${next}`, "ok");
        $("restart-now").hidden = false;
      } else if (body.error && body.error.code === "CLIENT_COMMAND_CONFLICT") {
        showBanner(format(gettext("%(reason)s. Nothing was saved."), { reason: body.error.message }), "error");
      } else {
        const issues = (body.error && body.error.details && body.error.details.issues) || [];
        showBanner(body.error ? body.error.message
          : format(gettext("Save failed (%(status)s)"), { status: response.status }), "error");
        showIssues(issues);
      }
    } catch (error) {
      showBanner(format(gettext("Save failed: %(reason)s"), { reason: error.message }), "error");
    } finally {
      saving = false;
      $("save").disabled = false;
    }
  }

  function addAgent(agent) {
    $("agents").append(agentCard(agent));
    renumber();
  }

  async function load() {
    try {
      const response = await fetch("/api/setup", { cache: "no-store" });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      render(/** @type {SetupSnapshot} */ (await response.json()));  // #/components/schemas/SetupSnapshot
    } catch (error) {
      $("intro").textContent = format(gettext("Could not load the setup: %(reason)s"), { reason: error.message });
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("setup-form").addEventListener("submit", save);
    $("restart-now").addEventListener("click", restartNow);
    $("add-agent").addEventListener("click", () => {
      const cwd = snapshot ? snapshot.configPath.replace(/[/\\][^/\\]*$/, "") : "";
      const driver = driverNames()[0] || "";
      addAgent({ id: "", driver, name: "", identity: "", command: { executable: driver, prefixArgs: [] }, cwd, enabled: true });
    });
    $("demo-picker").addEventListener("change", (event) => {
      const demo = snapshot && snapshot.demoAgents[Number(event.target.value)];
      if (demo) addAgent(demo);
      event.target.value = "";
    });
    load();
  });
})();

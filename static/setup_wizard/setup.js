// Agent Settings (/setup): edit the groupx.json draft from GET /api/setup and save it with POST.
// It is always served by a running room (the first run writes a starter config instead of a
// wizard: docs/DECISIONS.md D26), so a save takes effect at `groupx restart`. CLIs found on PATH
// are shown open; the ones that are not are folded away.
// Vanilla JS, no inline code (the CSP forbids it); text is always set as text, never as HTML.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  let snapshot = null;
  let saving = false;

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
    return (choice && choice.installHint) || `see the vendor's documentation for ${driver}`;
  }

  // Test: the CLI's --version and its native handshake, run by the server (POST /api/setup/test-cli)
  // on the CLI it found on PATH; the button names only the driver, never a command.
  async function testCli(driver, button, result) {
    button.disabled = true;
    result.className = "cli-result";
    result.textContent = `Testing ${driver}…`;
    try {
      const response = await fetch("/api/setup/test-cli", {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ driver }),
      });
      const body = await response.json();
      if (!response.ok) throw new Error((body.error && body.error.message) || `HTTP ${response.status}`);
      const version = body.version ? `version ${body.version}` : "no --version output";
      const shake = body.handshake.ok ? "handshake ok"
        : `handshake failed: ${body.handshake.code}: ${body.handshake.message}`;
      result.textContent = body.found ? `${version}; ${shake}` : `not found on PATH; install: ${body.installHint}`;
      result.classList.add(body.found && body.handshake.ok ? "ok" : "failed");
    } catch (error) {
      result.textContent = `The test could not run: ${error.message}`;
      result.classList.add("failed");
    } finally {
      button.disabled = false;
    }
  }

  function renderDrivers(drivers) {
    const item = (d) => {
      if (!d.found) {
        return el("li", { className: "missing" }, [
          el("strong", { textContent: d.driver }), " not found on PATH. ",
          el("span", { className: "install-hint", textContent: `Install: ${installHint(d.driver)}` }),
        ]);
      }
      const result = el("span", { className: "cli-result", role: "status" });
      const button = el("button", { type: "button", className: "test-cli", textContent: "Test" });
      button.setAttribute("aria-label", `Test ${d.driver}`);
      button.addEventListener("click", () => testCli(d.driver, button, result));
      return el("li", { className: "found" }, [
        el("strong", { textContent: d.driver }), ` ${d.command}${d.version ? ` (${d.version})` : ""} `,
        button, " ", result,
      ]);
    };
    const found = drivers.filter((d) => d.found);
    const missing = drivers.filter((d) => !d.found);
    $("drivers").replaceChildren(...(found.length ? found.map(item)
      : [el("li", { className: "none", textContent: "No agent CLI found on PATH: the demo agents stand in." })]));
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
    field("id").addEventListener("input", () => renumber());
    // One error line inside each field's label (so the grid keeps its shape), filled by path.
    for (const name of ["id", "driver", "name", "executable", "cwd", "identity"]) {
      field(name).closest("label").append(el("span", { className: "field-error" }));
    }
    return card;
  }

  // Paths in errors are positional (config.agents.2.cwd), so they follow the cards' order.
  function renumber() {
    document.querySelectorAll("#agents .agent").forEach((card, index) => {
      const at = `config.agents.${index}`;
      const id = card.querySelector('[name="id"]').value.trim();
      card.querySelector("legend").textContent = id ? `agent:${id}` : "new agent";
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
        el("summary", { textContent: `Other agents (not found on PATH): ${folded.length}` }),
        ...folded.map(agentCard),
      ]));
    }
    $("agents").replaceChildren(...cards);
    renumber();
  }

  function renderDemoPicker(demos) {
    const picker = $("demo-picker");
    picker.replaceChildren(el("option", { value: "", textContent: "Add a demo agent…" }),
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
    $("intro").textContent = `Editing ${data.configPath}. Changes take effect after \`groupx restart\`.`;
    if (data.existingConfigError) {
      showBanner(`The existing config could not be read, so this is a fresh draft: ${data.existingConfigError}`, "warn");
    }
    renderDrivers(data.drivers);
    const draft = data.config;
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

  /** Ask this runtime to stop and start again with the saved config, then wait until a fresh one
   * answers ready; the room's open pages reconnect by themselves. */
  async function restartNow() {
    const button = $("restart-now");
    button.disabled = true;
    showBanner("Restarting GroupX…", "ok");
    try {
      const health = await (await fetch("/api/health", { cache: "no-store" })).json();
      const response = await fetch("/api/runtime/restart", {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ runtimeScopeKey: health.runtimeScopeKey }),
      });
      if (response.status !== 202) throw new Error(`the restart was refused (${response.status})`);
      const deadline = Date.now() + RESTART_WAIT_MS;
      let wentDown = false;
      while (Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 500));
        let state = "down";
        try {
          const answer = await fetch("/api/health", { cache: "no-store" });
          state = answer.ok ? (await answer.json()).readiness : "down";
        } catch { /* the port is released between the two runtimes */ }
        if (state !== "ready") wentDown = true;
        else if (wentDown) {
          showBanner("GroupX restarted with the saved settings. ", "ok");
          $("banner").append(Object.assign(document.createElement("a"), { href: "/", textContent: "Back to the room" }));
          button.hidden = true;
          await load();
          return;
        }
      }
      throw new Error("GroupX did not come back within two minutes; look at the terminal that started it");
    } catch (error) {
      showBanner(`Restart failed: ${error.message}`, "error");
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
    try {
      const response = await fetch("/api/setup", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        // The revision read with the draft: a file changed since then is a 409, never overwritten.
        body: JSON.stringify(/** @type {SetupSaveBody} */ ({ config: collect(), revision: snapshot.revision })),  // #/components/schemas/SetupSaveBody
      });
      const body = await response.json();  // SetupSaved (#/components/schemas/SetupSaved) or ErrorBody
      if (response.ok) {
        snapshot.revision = body.revision;  // the next save is made from the file just written
        showBanner(`Saved ${body.agentCount} agents (${body.enabledAgentCount} enabled). `
          + "Run `groupx restart` (or press Restart GroupX now, below) to start new or changed agents; "
          + "until then new ones show as pending restart.", "ok");
        $("restart-now").hidden = false;
      } else if (body.error && body.error.code === "CLIENT_COMMAND_CONFLICT") {
        showBanner(`${body.error.message}. Nothing was saved.`, "error");
      } else {
        const issues = (body.error && body.error.details && body.error.details.issues) || [];
        showBanner(body.error ? body.error.message : `Save failed (${response.status})`, "error");
        showIssues(issues);
      }
    } catch (error) {
      showBanner(`Save failed: ${error.message}`, "error");
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
      $("intro").textContent = `Could not load the setup: ${error.message}`;
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

"""The targets, the printed table and the JSON file.

Targets are this project's goals for a 2-core machine (the first speed goals); FEATURES §20 calls them "not
promises until measured", which is what this file records.
"""

from __future__ import annotations

import json
from pathlib import Path


def targets(results: dict) -> list[dict]:
    rows = []

    def add(name: str, goal: str, measured: str, met: bool | None) -> None:
        rows.append({"target": name, "goal": goal, "measured": measured, "met": met})

    lat = results.get("latency")
    if lat:
        p50 = lat["postToReplyMs"]["p50"]
        add("latency", "p50 POST → reply ≤ 15 ms", f"p50 {p50} ms, p95 {lat['postToReplyMs']['p95']} ms", p50 <= 15)
    tp = results.get("throughput")
    if tp:
        ok = tp["turnsPerSecond"] >= 100 and tp["completed"] == tp["turns"]
        alone = results.get("throughputAlone")
        add(
            "throughput",
            "≥ 100 turns/s, all completed",
            f"{tp['turnsPerSecond']} turns/s with the fan-out, {tp['completed']}/{tp['turns']} completed"
            + (f" ({alone['turnsPerSecond']} turns/s alone)" if alone else ""),
            ok,
        )
    fan = results.get("fanout")
    if fan:
        ok = fan.get("clientsComplete") == fan.get("clients") and not (
            fan.get("missing") or fan.get("duplicates") or fan.get("outOfOrder") or fan.get("unexpected")
        )
        add(
            "fan-out",
            "every client every event once, in order",
            f"{fan.get('clientsComplete')}/{fan.get('clients')} clients complete, missing {fan.get('missing')}, "
            f"duplicates {fan.get('duplicates')}, out of order {fan.get('outOfOrder')}",
            ok,
        )
    rep = results.get("replay")
    if rep:
        ok = rep["medianSeconds"] < 1 and rep["maxReconnects"] == 0
        add(
            "replay",
            f"{rep['events']:,} events < 1 s, no reconnect",
            f"{rep['events']} events in {rep['medianSeconds']} s (median), {rep['maxReconnects']} reconnects",
            ok,
        )
    boot = results.get("bootstrap", {})
    if boot:
        largest = max(boot, key=int)
        median = boot[largest]["medianMs"]
        add("bootstrap", f"median ≤ 10 ms at {int(largest):,} events", f"{median} ms", median <= 10)
    mem = results.get("memory")
    if mem:
        peak = mem["serverPeakMiB"]
        megabytes = peak * 1.048_576  # the target is in MB (10^6 bytes); RSS is read in MiB
        add("memory", "server peak RSS ≤ 150 MB", f"{peak} MiB = {megabytes:.1f} MB (daphne process)", megabytes <= 150)
    return rows


def table(results: dict) -> str:
    lines = []
    lat, tp, fan, rep = (results.get(k) for k in ("latency", "throughput", "fanout", "replay"))
    if lat:
        lines.append(
            f"latency     POST→202 p50 {lat['postToAcceptedMs']['p50']} ms  p95 {lat['postToAcceptedMs']['p95']} ms"
            f" | POST→reply p50 {lat['postToReplyMs']['p50']} ms  p95 {lat['postToReplyMs']['p95']} ms"
            f"  ({lat['messages']} messages)"
        )
        steps = "  ".join(f"{k.split('.')[-1]} {v}" for k, v in lat.get("postToStepMs", {}).items())
        lines.append(f"            p50 POST → SSE step (ms): {steps}")
        if "serverCpuSeconds" in lat:
            per = lat["serverCpuSeconds"] * 1000 / (lat["messages"] + lat["warmup"])
            lines.append(f"            server CPU {per:.1f} ms per message (daphne process only)")
    with_fan = f"with {fan.get('clients')} SSE clients" if fan else "with the fan-out"
    for label, run in (("alone", results.get("throughputAlone")), (with_fan, tp)):
        if not run:
            continue
        lines.append(
            f"throughput  {run['turnsPerSecond']} turns/s {label}  {run['turns']} turns in"
            f" {run['secondsToLastTerminal']} s  completed {run['completed']} failed {run['failed']}"
            f"  429-retries {run['queueFullRetries']}  POST→202 p50 {run['postToAcceptedMs']['p50']} ms"
        )
        if "serverCpuSeconds" in run:
            lines.append(
                f"            server CPU {run['serverCpuSeconds']} s = "
                f"{run['serverCpuSeconds'] * 1000 / run['turns']:.1f} ms per turn (daphne process only)"
            )
    if fan:
        lines.append(
            f"fan-out     {fan.get('clients')} clients × {fan.get('expectedEvents')} events: missing"
            f" {fan.get('missing')} duplicates {fan.get('duplicates')} out-of-order {fan.get('outOfOrder')}"
            f"  reconnects {fan.get('reconnects')}  catch-up {fan.get('secondsToCatchUp')} s"
        )
    if rep:
        lines.append(
            f"replay      {rep['events']} events in {rep['medianSeconds']} s (median of {len(rep['runs'])})"
            f"  reconnects {rep['maxReconnects']}"
        )
    for size, boot in sorted(results.get("bootstrap", {}).items(), key=lambda kv: int(kv[0])):
        lines.append(
            f"bootstrap   {int(size):>7,} events: median {boot['medianMs']} ms  p95 {boot['p95Ms']} ms"
            f"  ({boot['bytes']:,} bytes)  server CPU {boot.get('serverCpuMsPerRequest')} ms/request"
        )
    mem = results.get("memory")
    if mem:
        lines.append(
            f"memory      server peak {mem['serverPeakMiB']} MiB; agent CLIs peak {mem['childPeakMiB']} MiB each"
            f" (max), {mem['childrenPeakSumMiB']} MiB together"
        )
    lines.append("")
    lines.append(f"{'target':<11} {'goal':<42} {'met':<8} measured")
    for row in targets(results):
        met = "MET" if row["met"] else "NOT MET"
        lines.append(f"{row['target']:<11} {row['goal']:<42} {met:<8} {row['measured']}")
    return "\n".join(lines)


def write(results: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**results, "targets": targets(results)}, indent=2, ensure_ascii=False) + "\n")

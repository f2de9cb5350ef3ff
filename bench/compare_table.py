"""The ratio table of `make bench-compare`: each harness result reduced to the figures of the speed goals,
GroupX over the reference per round, the median of the rounds, and each target met or missed.

Ratios are taken within a round (the reference and GroupX ran minutes apart on the same machine),
then the median of the rounds' ratios is the figure judged; the absolute columns are the medians of
the rounds too, for scale only.
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path

BEGIN = "<!-- bench-compare:begin -->"
END = "<!-- bench-compare:end -->"

# (key, label, comparison, target ratio or None): the speed goals, then figures shown for context.
FIGURES = (
    ("reply_p50_ms", "reply p50, ms", "≤", 0.7),
    ("reply_p95_ms", "reply p95, ms", "≤", 0.5),
    ("turns_per_s", "throughput, turns/s", "≥", 2.0),
    ("cpu_ms_per_turn", "server CPU per turn (throughput), ms", "≤", 0.5),
    ("rss_peak_mb", "peak RSS of the server process, MB", "≤", 0.5),
    ("replay_s", "replay of the whole log (1 client), s", None, None),
    ("bootstrap_ms", "bootstrap after the runs, median ms", None, None),
    ("failed_turns", "failed turns (throughput)", None, None),
    # split mode only: the agents' worker, a process of its own beside the web one (bench/compare.py)
    ("worker_cpu_s", "split: the agents' worker's CPU over the whole harness run, s", None, None),
    ("worker_rss_peak_mb", "split: peak RSS of the agents' worker, MB", None, None),
)


def _workload(results: list[dict], name: str, last: bool = False) -> dict:
    found = [r for r in results if r.get("workload") == name]
    return (found[-1] if last else found[0]) if found else {}


def figures(doc: dict) -> dict:
    """One harness document (bench/anchor/groupx_bench.py) → the compared figures."""
    results = doc.get("results", [])
    latency = _workload(results, "latency").get("reply_message_ms", {})
    throughput = _workload(results, "throughput")
    turns = throughput.get("turns_accepted") or 0
    cpu = throughput.get("server_cpu_s")
    return {
        "reply_p50_ms": latency.get("p50"),
        "reply_p95_ms": latency.get("p95"),
        "turns_per_s": throughput.get("turns_per_s"),
        "cpu_ms_per_turn": round(cpu * 1000 / turns, 2) if cpu is not None and turns else None,
        "rss_peak_mb": (doc.get("rss") or {}).get("server_vmhwm_mb"),
        "replay_s": _workload(results, "replay").get("elapsed_s"),
        "bootstrap_ms": _workload(results, "bootstrap", last=True).get("median_ms"),
        "failed_turns": throughput.get("failed"),
    }


def _ratio(mine, theirs) -> float | None:
    if isinstance(mine, (int, float)) and isinstance(theirs, (int, float)) and theirs:
        return mine / theirs
    return None


def _median(values: list) -> float | None:
    numbers = [v for v in values if isinstance(v, (int, float))]
    return statistics.median(numbers) if numbers else None


def _num(value, digits: int = 2) -> str:
    if value is None:
        return "–"
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}f}"


def summarise(rounds: list[dict], entries: list[str]) -> dict:
    """``rounds``: [{"reference": figures, "start": figures, ...}, ...] (a failed run is absent)."""
    out: dict = {"reference": {}, "entries": {}}
    for key, *_ in FIGURES:
        out["reference"][key] = _median([r["reference"].get(key) for r in rounds if "reference" in r])
    for entry in entries:
        column: dict = {}
        for key, _label, comparison, target in FIGURES:
            paired = [(r[entry].get(key), r["reference"].get(key)) for r in rounds if entry in r and "reference" in r]
            ratios = [_ratio(mine, theirs) for mine, theirs in paired]
            ratio = _median(ratios)
            met = None
            if target is not None and ratio is not None:
                met = ratio <= target if comparison == "≤" else ratio >= target
            column[key] = {
                "median": _median([mine for mine, _ in paired]),
                "ratio": ratio,
                "ratios": [r for r in ratios if r is not None],
                "met": met,
            }
        out["entries"][entry] = column
    return out


ENTRY_TITLES = {"start": "`groupx start`", "runserver": "`manage.py runserver`", "split": "`groupx start --split`"}


def markdown(summary: dict, entries: list[str]) -> str:
    head = "| figure | reference | target |"
    rule = "|---|---|---|"
    for entry in entries:
        head += f" {ENTRY_TITLES.get(entry, entry)} | ratio (per round) | |"
        rule += "---|---|---|"
    lines = [head, rule]
    for key, label, comparison, target in FIGURES:
        digits = {"rss_peak_mb": 0, "worker_rss_peak_mb": 0, "replay_s": 3}.get(key, 2)
        row = f"| {label} | {_num(summary['reference'][key], digits)} | "
        row += f"{comparison} {target}× |" if target is not None else "– |"
        for entry in entries:
            cell = summary["entries"][entry][key]
            ratios = " · ".join(f"{r:.2f}" for r in cell["ratios"])
            verdict = {True: "met", False: "**missed**", None: ""}[cell["met"]]
            ratio = f"**{cell['ratio']:.2f}** ({ratios})" if cell["ratio"] is not None else "–"
            row += f" {_num(cell['median'], digits)} | {ratio} | {verdict} |"
        lines.append(row)
    return "\n".join(lines)


def write_between_markers(path: Path, text: str, begin: str = BEGIN, end: str = END) -> None:
    document = path.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
    if not pattern.search(document):
        raise SystemExit(f"{path} has no {begin} … {end} markers: nothing written")
    path.write_text(pattern.sub(lambda _: f"{begin}\n{text}\n{end}", document, count=1), encoding="utf-8")

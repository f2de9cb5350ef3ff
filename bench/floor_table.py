"""The arithmetic and the Markdown of ``python -m bench.floor`` (no measuring here).

Every figure is CPU time per Turn or per request; the derived ones are:

- the throughput ceiling a server costing 0 ms would allow, set by the processes that are not the
  server: ``cores × 1000 / (harness + agents ms per Turn)``;
- the server CPU per Turn at which a throughput is reachable on ``cores`` cores:
  ``cores × 1000 / turns_per_s − (harness + agents)`` (negative: impossible whatever the server
  costs); and on one core (a server whose work holds one interpreter lock): ``1000 / turns_per_s``.
"""

from __future__ import annotations

BEGIN = "<!-- bench-floor:begin -->"
END = "<!-- bench-floor:end -->"
KIND_TITLES = {"reference": "reference (Node)", "start": "GroupX `groupx start`"}


def ceiling_turns_per_s(cores: int, others_ms: float) -> float | None:
    """Turns/s the machine allows when the server costs nothing: the others' CPU fills every core."""
    return cores * 1000 / others_ms if others_ms > 0 else None


def server_budget_ms(cores: int, others_ms: float, turns_per_s: float) -> float:
    """Server CPU per Turn at which ``turns_per_s`` fills ``cores`` cores with the others' CPU."""
    return cores * 1000 / turns_per_s - others_ms


def _num(value, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def ceiling_section(rows: list[dict], cores: int) -> tuple[str, dict]:
    """Part 1's table and the derived figures (``derived``: for the summary and the prose)."""
    lines = [
        "| server | Turns | turns/s | server CPU, ms/Turn | the server's cores in use | harness CPU, ms/Turn "
        f"| fake agents' CPU, ms/Turn | ceiling with a 0 ms server on {cores} cores, turns/s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        others = row["harness_ms"] + row["agents_ms"]
        busy = row["server_ms"] * row["turns_per_s"] / 1000 if row["server_ms"] and row["turns_per_s"] else None
        lines.append(
            f"| {KIND_TITLES.get(row['kind'], row['kind'])} | {row['turns']} | {_num(row['turns_per_s'], 1)} "
            f"| {_num(row['server_ms'])} | {_num(busy)} | {_num(row['harness_ms'])} | {_num(row['agents_ms'])} "
            f"| {_num(ceiling_turns_per_s(cores, others), 0)} |"
        )
    for row in rows:
        if len(row.get("rounds", ())) > 1:
            lines.append("")
            lines.append(
                f"{KIND_TITLES.get(row['kind'], row['kind'])}, each round: "
                + " · ".join(f"{r['turns_per_s']:.1f} turns/s at {r['server_ms']:.2f} ms" for r in row["rounds"])
            )
    derived: dict = {}
    by_kind = {row["kind"]: row for row in rows}
    reference, groupx = by_kind.get("reference"), by_kind.get("start")
    if reference and groupx and reference["turns_per_s"]:
        target = 2 * reference["turns_per_s"]
        others = groupx["harness_ms"] + groupx["agents_ms"]
        derived = {
            "target_turns_per_s": target,
            "budget_ms": server_budget_ms(cores, others, target),
            "one_core_budget_ms": 1000 / target,
            "others_ms": others,
            "ceiling": ceiling_turns_per_s(cores, others),
        }
        lines.append("")
        lines.append(
            f"2× the reference's {reference['turns_per_s']:.1f} turns/s is {target:.1f} turns/s. With "
            f"GroupX's harness and agents at {others:.2f} ms per Turn, {cores} cores reach it while "
            f"GroupX's server costs at most **{derived['budget_ms']:.2f} ms** per Turn "
            f"({cores} × 1000 / {target:.1f} − {others:.2f}); a server whose Turn runs on one core "
            f"(one interpreter lock) at most **{derived['one_core_budget_ms']:.2f} ms**. It measured "
            f"{groupx['server_ms']:.2f} ms."
        )
    return "\n".join(lines), derived


def http_section(rows: list[dict]) -> str:
    node = next((row["us_per_request"] for row in rows if row["layer"] == "node"), None)
    lines = [
        "| layer | server CPU, µs/request | × Node's | requests/s | server peak RSS, MiB |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        ratio = f"{row['us_per_request'] / node:.1f}×" if node else "–"
        lines.append(
            f"| {row['label']} | {row['us_per_request']:.0f} | {ratio} | {row['requests_per_s']} "
            f"| {_num(row.get('rss_mb'), 1)} |"
        )
    return "\n".join(lines)


def sse_section(rows: list[dict]) -> str:
    node = next((row["us_per_frame"] for row in rows if row["layer"] == "node"), None)
    lines = ["| layer | server CPU, µs/frame | × Node's | frames/s |", "|---|---|---|---|"]
    for row in rows:
        ratio = f"{row['us_per_frame'] / node:.1f}×" if node else "–"
        lines.append(f"| {row['label']} | {row['us_per_frame']:.1f} | {ratio} | {row['frames_per_s']} |")
    return "\n".join(lines)


def floor_rows(
    http: list[dict],
    sse: list[dict],
    sqlite: dict | None,
    pipes: dict | None,
    posts_per_turn: float,
    frames_per_turn: float | None,
) -> list[tuple]:
    """(component, ms of server CPU per Turn) of the stack GroupX runs: daphne + Django + SQLite + pipes."""
    rows = []
    django = next((row for row in http if row["layer"] == "daphne_django"), None)
    if django:
        rows.append(
            (
                f"HTTP: the message post through daphne + Django + ninja, {posts_per_turn:.2f} per Turn (part 2)",
                django["us_per_request"] * posts_per_turn / 1000,
            )
        )
    daphne_sse = next((row for row in sse if row["layer"] == "daphne_bare"), None)
    if daphne_sse and frames_per_turn:
        rows.append(
            (
                f"SSE: {frames_per_turn:.1f} frames per Turn to the harness's one client through daphne (part 2b)",
                daphne_sse["us_per_frame"] * frames_per_turn / 1000,
            )
        )
    if sqlite:
        rows.append(
            (
                f"SQLite: the {sqlite['statements_per_turn']:.0f} statements of one Turn, "
                "replayed without Django (part 3)",
                sqlite["sqlite_ms"],
            )
        )
    if pipes:
        rows.append(("ACP pipes: one prompt round trip to the instant agent (part 4)", pipes["pipe_ms"]))
    return rows


def summary_section(components: list[tuple], ceiling_rows: list[dict]) -> tuple[str, float | None]:
    lines = ["| | server CPU, ms/Turn |", "|---|---|"]
    for label, ms in components:
        lines.append(f"| {label} | {ms:.2f} |")
    total = sum(ms for _, ms in components) if components else None
    label = (
        "sum: the floor of a Turn on daphne + Django + SQLite + pipes"
        if len(components) == 4
        else "sum of the rows above (the parts not run are missing from it)"
    )
    lines.append(f"| **{label}** | **{_num(total)}** |")
    by_kind = {row["kind"]: row for row in ceiling_rows}
    if "start" in by_kind:
        lines.append(f"| GroupX `groupx start`, measured (part 1) | {by_kind['start']['server_ms']:.2f} |")
    if "reference" in by_kind:
        reference = by_kind["reference"]["server_ms"]
        lines.append(f"| the reference, measured (part 1) | {reference:.2f} |")
        lines.append(f"| what the 0.5× target asks of GroupX | ≤ {reference / 2:.2f} |")
    return "\n".join(lines), total


def _compare(floor: float, target: float) -> str:
    if floor > target:
        return f"above the target by {floor - target:.2f} ms before any of GroupX's own code"
    return f"below the target, leaving {target - floor:.2f} ms for GroupX's own code"


def targets_prose(
    ceiling_rows: list[dict],
    derived: dict,
    http: list[dict],
    sqlite: dict | None,
    pipes: dict | None,
    total: float | None,
) -> str:
    """Per issue-22 target: the figure of this run, the floor, and the row that shows why."""
    by_kind = {row["kind"]: row for row in ceiling_rows}
    reference, groupx = by_kind.get("reference"), by_kind.get("start")
    django = next((row for row in http if row["layer"] == "daphne_django"), None)
    out = []
    if reference and groupx and django and sqlite and pipes:
        path = django["us_per_request"] / 1000 + sqlite["sqlite_ms"] + pipes["round_trip_ms"]
        for key, label, factor in (("reply_p50_ms", "p50", 0.7), ("reply_p95_ms", "p95", 0.5)):
            target = reference[key] * factor
            out.append(
                f"- **Reply {label}** (≤ {factor}×): the reference's {reference[key]:.2f} ms asks for ≤ {target:.2f} ms; "
                f"GroupX measured {groupx[key]:.2f} ms (part 1's latency run). A reply's path holds at least one post "
                f"through daphne + Django ({django['us_per_request'] / 1000:.2f} ms of CPU, part 2), one Turn's "
                f"statements ({sqlite['sqlite_ms']:.2f} ms, part 3) and one prompt round trip to the agent "
                f"({pipes['round_trip_ms']:.2f} ms of wall time, the agent's included, part 4): {path:.2f} ms, "
                f"{_compare(path, target)}."
            )
    if derived and groupx:
        out.append(
            f"- **Throughput** (≥ 2×): {derived['target_turns_per_s']:.1f} turns/s. The harness and the fake agents "
            f"alone cap the machine at {derived['ceiling']:.0f} turns/s (part 1). The target needs GroupX's server "
            f"at ≤ {derived['budget_ms']:.2f} ms per Turn with every core shared, ≤ {derived['one_core_budget_ms']:.2f} "
            f"ms if its Turn runs on one core; it measured {groupx['server_ms']:.2f} ms"
            + (
                f", and the floor of the stack (the sum above) is {total:.2f} ms: "
                f"{_compare(total, derived['one_core_budget_ms'])} on one core."
                if total is not None
                else "."
            )
        )
    if reference and total is not None:
        target = reference["server_ms"] / 2
        out.append(
            f"- **Server CPU per Turn** (≤ 0.5×): ≤ {target:.2f} ms; GroupX measured {groupx['server_ms']:.2f} ms. "
            f"The floor of daphne + Django + SQLite + pipes is {total:.2f} ms (the sum above), {_compare(total, target)}"
            + (
                f"; its HTTP row alone is {django['us_per_request'] / 1000:.2f} ms per post against "
                f"{next(r['us_per_request'] for r in http if r['layer'] == 'node') / 1000:.2f} ms for Node's own http "
                "server (part 2)."
                if django and any(r["layer"] == "node" for r in http)
                else "."
            )
        )
    if reference and groupx and reference.get("rss_mb") and groupx.get("rss_mb"):
        line = (
            f"- **Peak RSS** (≤ 0.5×): GroupX {groupx['rss_mb']:.1f} MiB against the reference's "
            f"{reference['rss_mb']:.1f} MiB, {groupx['rss_mb'] / reference['rss_mb']:.2f}× (part 1)"
        )
        if django:
            line += (
                f"; daphne + GroupX's Django with no GroupX code peaks at {django['rss_mb']:.1f} MiB "
                f"(part 2), {django['rss_mb'] / reference['rss_mb']:.2f}× the reference"
            )
        out.append(line + ".")
    return "\n".join(out)

"""``python -m bench.post_cost``: the server CPU of the real ``POST /api/messages`` through its HTTP
path, beside the floor's do-nothing endpoint (``bench/floor_django.py``), the speed goals, D66.

A GroupX server (``bench/server.py``: daphne, its own SQLite, the three instant fake agents) is
posted one message; the measured requests replay that message (the same ``clientCommandId`` and
body), which the real endpoint answers exactly as the first time: 202 and the stored result, read
by the command (``rooms.commands.run_once``: one SELECT on the writer thread) with no Turn run.
The server logs no request, as `groupx start` (daphne's command line would, at verbosity 1).
So each measured request is the real post's whole HTTP path (daphne, the ASGI router, the write
guard, Django's handler and middleware, ninja, the body's check and model, the writer hop, the
response) and the smallest command there is. The load client is the floor's raw-socket client
(``bench/floor_http.py``); the server's CPU per request is ``/proc/<pid>/stat`` before/after.

``--refused`` measures a refused post instead: the same ``clientCommandId`` with another body, which
the command refuses on the writer thread with 409 ``CLIENT_COMMAND_CONFLICT`` and nothing written,
the path a 429 ``QUEUE_CAPACITY_REACHED`` of the throughput workload takes (D70).

Each round measures the real post, then the floor's server (``--no-floor``: not), alternately.
``--profile``: py-spy shares by package of a further run; ``--cprofile``: cProfile in the server's
main thread (``bench/post_profiled.py``) over a further run: function calls per request, by package,
and the functions called most: counts the load of the shared machine does not move.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pstats
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

from bench import floor_http, floor_profile
from bench.memory import cpu_seconds
from bench.server import REPO, BenchServer, settle

COMMAND_ID = "bench-post-cost-1"


def replayed_request(port: int, refused: bool = False) -> bytes:
    body = floor_http.message_body(COMMAND_ID)
    if refused:  # the same command id, another body: CLIENT_COMMAND_CONFLICT
        body = body.replace(b'"content":"bench', b'"content":"other')
    return floor_http.request_bytes(port, body)


def expected_status(refused: bool) -> int:
    return 409 if refused else 202


def measure_real(
    server: BenchServer, port: int, requests: int, connections: int, warmup: int, refused: bool = False
) -> dict:
    request = replayed_request(port, refused)
    asyncio.run(floor_http.load(port, warmup, connections, request))
    before, started = cpu_seconds(server.proc.pid), time.perf_counter()
    statuses = asyncio.run(floor_http.load(port, requests, connections, request))
    elapsed, cpu = time.perf_counter() - started, cpu_seconds(server.proc.pid) - before
    if statuses.get(expected_status(refused)) != requests:
        raise RuntimeError(f"the real post: answers {statuses}, expected {requests} × {expected_status(refused)}")
    return {"us_per_request": round(cpu * 1e6 / requests, 1), "requests_per_s": round(requests / elapsed)}


def where(filename: str) -> str:
    """A function's file as its package's path (``django/http/response.py``, ``groupx_site/middleware.py``)."""
    if filename.startswith(str(REPO)):
        return filename[len(str(REPO)) :].lstrip("/")
    if "site-packages/" in filename:
        return filename.split("site-packages/", 1)[1]
    if "/lib/python3" in filename:
        return filename.split("/lib/python3", 1)[1].split("/", 1)[-1]
    return filename


def package(filename: str) -> str:
    if filename.startswith(("~", "<")):
        return "builtins"  # C functions (cProfile's "~") and generated code
    return where(filename).split("/", 1)[0].removesuffix(".py")


def call_counts(raw: Path, requests: int, top: int = 25) -> dict:
    stats = pstats.Stats(str(raw)).stats  # {(file, line, name): (primitive calls, calls, tottime, cumtime, callers)}
    by_package: Counter = Counter()
    by_function: Counter = Counter()
    total = 0
    for (filename, line, name), (_, calls, *_rest) in stats.items():
        total += calls
        by_package[package(filename)] += calls
        by_function[f"{name} ({where(filename)}:{line})"] += calls
    per = lambda n: round(n / requests, 1)  # noqa: E731
    return {
        "calls_per_request": per(total),
        "by_package": [(name, per(n)) for name, n in by_package.most_common()],
        "functions": [(name, per(n)) for name, n in by_function.most_common(top)],
    }


def cprofiled(
    server: BenchServer, port: int, requests: int, connections: int, raw: Path, refused: bool = False
) -> dict:
    base = f"http://127.0.0.1:{port}/__bench/cprofile/"
    request = replayed_request(port, refused)
    httpx.post(base + "start", timeout=10).raise_for_status()
    statuses = asyncio.run(floor_http.load(port, requests, connections, request))
    httpx.post(base + "stop", timeout=30).raise_for_status()
    if statuses.get(expected_status(refused)) != requests:
        raise RuntimeError(f"the real post under cProfile: answers {statuses}")
    return call_counts(raw, requests)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-floor", action="store_true", help="measure the real post only")
    parser.add_argument("--profile", action="store_true", help="py-spy shares by package (after the rounds)")
    parser.add_argument("--cprofile", action="store_true", help="cProfile call counts per request (after the rounds)")
    parser.add_argument("--cprofile-out", type=Path, help="keep cProfile's stats in this file (pstats)")
    parser.add_argument(
        "--refused",
        action="store_true",
        help="measure a refused post (409 CLIENT_COMMAND_CONFLICT from the command) instead",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    log = lambda text: print(text, flush=True)  # noqa: E731

    with tempfile.TemporaryDirectory(prefix="groupx-bench-post-") as scratch:
        raw = (args.cprofile_out or Path(scratch) / "cprofile.out").resolve()
        server = BenchServer(Path(scratch) / "room", app="bench.post_profiled:application", access_log=False)
        server.env["GROUPX_BENCH_CPROFILE"] = str(raw)
        server.start()
        try:
            first = httpx.post(
                f"{server.base_url}/api/messages",
                content=floor_http.message_body(COMMAND_ID),
                headers={"Content-Type": "application/json"},
                timeout=30,
            )
            if first.status_code != 202:
                raise RuntimeError(f"the first post: {first.status_code} {first.text}")
            settle(server.proc.pid)  # its three Turns are over before anything is measured
            port = int(server.base_url.rsplit(":", 1)[1])
            rows: dict[str, list[float]] = {"real": [], "floor": []}
            for round_ in range(args.rounds):
                real = measure_real(server, port, args.requests, args.connections, args.warmup, args.refused)
                rows["real"].append(real["us_per_request"])
                what = "refused, 409" if args.refused else "replayed, 202"
                log(
                    f"round {round_ + 1}: the real post ({what}): {real['us_per_request']} µs of server CPU "
                    f"per request ({real['requests_per_s']} requests/s)"
                )
                if not args.no_floor:
                    floor = floor_http.measure("daphne_django", None, args.requests, args.connections, args.warmup)
                    rows["floor"].append(floor["us_per_request"])
                    log(
                        f"round {round_ + 1}: the floor's ninja endpoint: {floor['us_per_request']} µs "
                        f"({floor['requests_per_s']} requests/s)"
                    )
            result: dict = {"median_us": {k: statistics.median(v) for k, v in rows.items() if v}, "rounds": rows}
            if args.profile:
                spy = Path(scratch) / "py-spy.txt"
                with floor_profile.sampled(server.proc.pid, spy):
                    asyncio.run(
                        floor_http.load(port, args.requests, args.connections, replayed_request(port, args.refused))
                    )
                result["profile"] = floor_profile.shares(spy)
                log(f"py-spy: {floor_profile.summary(result['profile'], top=9)}")
            if args.cprofile:
                result["cprofile"] = cprofiled(server, port, args.requests, args.connections, raw, args.refused)
                counts = result["cprofile"]
                log(
                    f"cProfile: {counts['calls_per_request']} function calls per request in the main thread; by package: "
                    + ", ".join(f"{name} {n}" for name, n in counts["by_package"][:10])
                )
                for name, n in counts["functions"]:
                    log(f"  {n:7.1f}  {name}")
        finally:
            server.stop()
    log(f"median µs of server CPU per request: {result['median_us']}")
    if args.json:
        print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()

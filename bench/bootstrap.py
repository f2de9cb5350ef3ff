"""Bootstrap: GET /api/bootstrap at a given history size (the log is seeded beforehand).

Timed from the client, so each figure includes the HTTP round trip a browser pays; the median of
sequential requests after a short warm-up.
"""

from __future__ import annotations

import statistics
import time

import httpx

from bench.stats import percentile


def run(base_url: str, *, cpu, requests: int = 50, warmup: int = 5) -> dict:
    """``cpu()`` returns the server's CPU seconds so far (bench.memory.cpu_seconds)."""
    times, snapshot, cpu_before = [], None, 0.0
    with httpx.Client(base_url=base_url, timeout=10) as client:
        for index in range(warmup + requests):
            if index == warmup:
                cpu_before = cpu()
            started = time.perf_counter()
            response = client.get("/api/bootstrap")
            elapsed = time.perf_counter() - started
            response.raise_for_status()
            snapshot = response.json()
            if index >= warmup:
                times.append(elapsed * 1000)
    return {
        "requests": requests,
        "warmup": warmup,
        "throughSeq": snapshot["room"]["throughSeq"],
        "recentEvents": len(snapshot["recentEvents"]),
        "bytes": len(response.content),
        "medianMs": round(statistics.median(times), 2),
        "serverCpuMsPerRequest": round((cpu() - cpu_before) * 1000 / requests, 2),
        "p95Ms": round(percentile(times, 95), 2),
    }

"""Small summary statistics (milliseconds, rounded for the table)."""

from __future__ import annotations

import statistics


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile: p95 of 50 samples is the 48th smallest, an observed value."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def summary_ms(seconds: list[float]) -> dict:
    ms = [s * 1000 for s in seconds]
    if not ms:
        return {"n": 0}
    return {
        "n": len(ms),
        "p50": round(statistics.median(ms), 2),
        "p95": round(percentile(ms, 95), 2),
        "min": round(min(ms), 2),
        "max": round(max(ms), 2),
    }

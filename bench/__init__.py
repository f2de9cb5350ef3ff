"""GroupX benchmarks (`make bench`, `python -m bench.run`).

Speed is measured here against a real server over HTTP/SSE on 127.0.0.1, never asserted by timing
in the test suite (docs/PERFORMANCE.md). Stdlib + httpx only, every loop bounded.
"""

"""The speed seam: every mechanism that copies or patches a dependency's internals, or exists only to
cut CPU or latency, each with a name and a switch (``switches.py``, ``groupx.json`` ``server.speedups``)."""

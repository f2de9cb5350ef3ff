"""The shared vocabulary every app stands on: errors, ids, text, bodies, the REST contract, HTTP helpers.

It imports no store (``groupx_site/store``), no app and nothing else of groupx_site (docs/ARCHITECTURE.md
"Layers").
"""

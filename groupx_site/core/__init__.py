"""The ground every app stands on: errors, the store executors and faults, text, bodies, ids, HTTP helpers.

It imports no app and nothing from the rest of groupx_site (docs/ARCHITECTURE.md "Layers").
"""

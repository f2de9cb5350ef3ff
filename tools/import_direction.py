"""Every import against the layer order, counted independently of import-linter's ignore list.

Reads the ``layers`` contract of pyproject.toml ([tool.importlinter], first layer highest), builds the
import graph with grimp (the library import-linter runs on; it reads every import statement of
every module, those inside functions included) and lists each direct import from a lower layer
into a higher one. The contract may excuse at most ``MAX_EDGES`` of them (its ``ignore_imports``,
each with its reason, docs/DECISIONS.md D152); more fails. It also holds each package of
``[tool.import_direction.allow]`` to its allow-list: the standard library, the package itself and
the modules listed (D154). Run by ``make test`` and ``make lint``:

    .venv/bin/python tools/import_direction.py
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import grimp

MAX_EDGES = 3
ROOT = Path(__file__).resolve().parent.parent


def layer_contract(config: dict) -> dict:
    contracts = config["tool"]["importlinter"]["contracts"]
    return next(contract for contract in contracts if contract["id"] == "layers")


def layer_index(module: str, layers: list[list[str]]) -> int | None:
    """The index of the layer ``module`` belongs to (0 is the highest), None outside every layer."""
    for index, members in enumerate(layers):
        if any(module == member or module.startswith(member + ".") for member in members):
            return index
    return None


def edges_against(graph: grimp.ImportGraph, layers: list[list[str]]) -> list[tuple[str, str, list[int]]]:
    """(importer, imported, line numbers) for each import from a lower layer into a higher one."""
    found = []
    for importer in sorted(graph.modules):
        low = layer_index(importer, layers)
        if low is None:
            continue
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            high = layer_index(imported, layers)
            if high is not None and high < low:
                details = graph.get_import_details(importer=importer, imported=imported)
                found.append((importer, imported, sorted(d["line_number"] for d in details)))
    return found


def outside_allow_list(graph: grimp.ImportGraph, package: str, allowed: list[str]) -> list[tuple[str, str]]:
    """(importer, imported) for each import of ``package`` that is neither the standard library, the
    package itself nor a module of ``allowed`` (a listed module admits its submodules)."""
    admitted = [package, *allowed]
    found = []
    for importer in sorted(graph.modules):
        if importer != package and not importer.startswith(package + "."):
            continue
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            if imported.split(".")[0] in sys.stdlib_module_names:
                continue
            if not any(imported == name or imported.startswith(name + ".") for name in admitted):
                found.append((importer, imported))
    return found


def main() -> int:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    packages = config["tool"]["importlinter"]["root_packages"]
    contract = layer_contract(config)
    layers = [[name.strip() for name in layer.replace("|", ":").split(":")] for layer in contract["layers"]]
    sys.path.insert(0, str(ROOT))
    graph = grimp.build_graph(*packages, include_external_packages=True, cache_dir=None)
    edges = edges_against(graph, layers)
    for importer, imported, lines in edges:
        print(f"{importer} -> {imported} (line {', '.join(map(str, lines))})")
    print(f"{len(edges)} import(s) against the layers; at most {MAX_EDGES} allowed.")
    refused = []
    for package, allowed in config["tool"].get("import_direction", {}).get("allow", {}).items():
        refused += outside_allow_list(graph, package, allowed)
    for importer, imported in refused:
        print(f"{importer} -> {imported}: not on the allow-list of pyproject.toml [tool.import_direction.allow]")
    return 1 if len(edges) > MAX_EDGES or refused else 0


if __name__ == "__main__":
    sys.exit(main())

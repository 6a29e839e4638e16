"""Print which of Quire's packages and modules import which, and check the design's rules:
metadata imports nothing of ours, image only metadata, be only metadata, fe anything but tests.

    python scripts/import_graph.py             # package edges, then the rules
    python scripts/import_graph.py --modules   # module edges
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("metadata", "image", "be", "fe")
MAY_IMPORT = {
    "metadata": set(),
    "image": {"metadata"},
    "be": {"metadata"},
    "fe": {"metadata", "image", "be"},
}


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def imports(path: Path) -> set[str]:
    """The first-party modules a file imports (at any depth: imports inside functions count)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in names if name.split(".")[0] in PACKAGES}


def module_edges() -> dict[str, set[str]]:
    known = modules()
    edges: dict[str, set[str]] = {}
    for name, path in known.items():
        targets = set()
        for imported in imports(path):
            while imported and imported not in known:
                imported = imported.rpartition(".")[0]
            if imported and imported != name:
                targets.add(imported)
        # `from fe import accounts` names both fe and fe.accounts: keep the module
        edges[name] = {t for t in targets if not any(o.startswith(t + ".") for o in targets)}
    return edges


def package_edges(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    packages: dict[str, set[str]] = defaultdict(set)
    for source, targets in edges.items():
        for target in targets:
            if target.split(".")[0] != source.split(".")[0]:
                packages[source.split(".")[0]].add(target.split(".")[0])
    return packages


def broken_rules(edges: dict[str, set[str]]) -> list[str]:
    broken = []
    for source, targets in sorted(edges.items()):
        top = source.split(".")[0]
        for target in sorted(targets):
            other = target.split(".")[0]
            if other != top and other not in MAY_IMPORT[top]:
                broken.append(
                    f"{source} imports {target}: {top} may import {MAY_IMPORT[top] or 'nothing of ours'}"
                )
    return broken


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", action="store_true", help="module edges, not package edges")
    arguments = parser.parse_args()
    edges = module_edges()
    shown = edges if arguments.modules else package_edges(edges)
    for source in sorted(shown):
        print(f"{source} -> {', '.join(sorted(shown[source])) or '(nothing of ours)'}")
    broken = broken_rules(edges)
    for line in broken:
        print(f"BROKEN: {line}")
    print("rules: " + ("broken" if broken else "kept"))
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())

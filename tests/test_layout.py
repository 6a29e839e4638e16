"""The design's dependency rules hold: metadata imports nothing of ours, image only metadata, be
only metadata (never fe), as scripts/import_graph.py prints them."""

import ast
import subprocess
import sys

from tests.harness import REPO


def test_packages_import_only_what_the_design_allows():
    done = subprocess.run(
        [sys.executable, "scripts/import_graph.py"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("rules: kept")


def test_no_module_imports_another_modules_private_names():
    """What modules share is public: a name with a leading underscore stays in its module."""
    borrowed = []
    for package in ("metadata", "image", "be", "fe"):
        for path in sorted((REPO / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [alias.name for alias in node.names if alias.name.startswith("_")]
                    if names and node.module.split(".")[0] in ("metadata", "image", "be", "fe"):
                        borrowed.append(f"{path.relative_to(REPO)}: {node.module} {names}")
    assert not borrowed, borrowed

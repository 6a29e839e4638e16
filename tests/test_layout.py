"""The design's dependency rules hold: metadata imports nothing of ours, image only metadata, be
only metadata (never fe), as scripts/import_graph.py prints them."""

import ast
import gc
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
            for node in ast.walk(_parse(path)):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [alias.name for alias in node.names if alias.name.startswith("_")]
                    if names and node.module.split(".")[0] in ("metadata", "image", "be", "fe"):
                        borrowed.append(f"{path.relative_to(REPO)}: {node.module} {names}")
    assert not borrowed, borrowed


def _parse(path) -> ast.Module:
    """CPython 3.11's parser fails ("AST constructor recursion depth mismatch") when a garbage
    collection in the middle of a parse runs some other object's finalizer: none runs in one."""
    gc.disable()
    try:
        return ast.parse(path.read_text(), str(path))
    finally:
        gc.enable()


def test_every_module_imports_on_its_own():
    """No import cycle hides behind the order modules happen to be imported in: each module of
    ours imports first, in a process that has imported none of them (they are run in one
    interpreter, our modules forgotten before each)."""
    script = """
import importlib, sys
ours = ("metadata", "image", "be", "fe")
failed = []
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m.split(".")[0] in ours]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception as error:
        failed.append(f"{name}: {type(error).__name__}: {error}")
print("\\n".join(failed))
"""
    modules = [
        ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        for package in ("metadata", "image", "be", "fe")
        for path in sorted((REPO / package).rglob("*.py"))
    ]
    done = subprocess.run(
        [sys.executable, "-c", script, *modules], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", done.stdout

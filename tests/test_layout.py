"""The design's dependency rules hold: metadata imports nothing of ours, image only metadata, be
only metadata (never fe), as scripts/import_graph.py prints them."""

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

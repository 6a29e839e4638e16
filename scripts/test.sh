#!/usr/bin/env bash
# One command: set everything up, lint, then run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
# Two workers, each taking whole test files (a file's tests share its module fixtures): most
# tests wait on the processes they start, so two keep a 2-core machine busy.
exec .venv/bin/pytest -q --numprocesses 2 --dist loadfile --durations=30 "$@"

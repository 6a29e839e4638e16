#!/usr/bin/env bash
# One command: set everything up, lint, then run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
exec .venv/bin/pytest -q --durations=30 "$@"

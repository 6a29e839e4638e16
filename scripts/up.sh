#!/usr/bin/env bash
# One command for a newcomer: set everything up, then start the all-in-one node in the foreground.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec .venv/bin/quire up "$@"

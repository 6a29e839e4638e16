#!/usr/bin/env bash
# Sets up everything Quire needs on a fresh Debian machine: system packages, a virtualenv in .venv,
# and Quire installed into it (editable) with its test dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(mariadb-client mariadb-server sysbench libmariadb-java libdbd-mariadb-perl python3-venv etcd-server etcd-client curl libmariadb-dev pkg-config build-essential python3-dev chromium)
missing=()
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
command -v javac >/dev/null 2>&1 || missing+=(default-jdk-headless)
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/pip install -q --upgrade pip >/dev/null
.venv/bin/pip install -q -e '.[test]'
# Quire's own modules compiled once: an editable install leaves them as source, and where
# PYTHONDONTWRITEBYTECODE is set every process would compile them again as it starts (a third of
# a second each; the tests start hundreds). A module changed since is compiled again as before.
.venv/bin/python -m compileall -q -j 0 fe be metadata image tests scripts >/dev/null

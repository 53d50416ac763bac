#!/usr/bin/env bash
# Creates the repo-local Python environment (.venv) used by tests, model fetching and benchmarks.
# No PyTorch here: tests compare against committed references or against the small `tokenizers` wheel.
set -euo pipefail
cd "$(dirname "$0")/.."
REQ=scripts/requirements-test.txt
STAMP=.venv/.installed-$(sha1sum "$REQ" | cut -c1-12)
if [ -f "$STAMP" ]; then exit 0; fi
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q -r "$REQ"
rm -f .venv/.installed-*
touch "$STAMP"

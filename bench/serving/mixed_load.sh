#!/usr/bin/env bash
# Mixed-load benchmark (issue 20): a query probe under bulk load, orchid (serve, gateway + 2
# workers, --scheduling fcfs) vs Infinity, one run. Infinity and matplotlib (for the plot) need
# PyTorch-era packages CI never installs: they live in .venv-peer, made here on first use
# (SKIP_PEER=1 leaves Infinity out).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "${SKIP_PEER:-0}" != 1 ] && [ ! -x .venv-peer/bin/infinity_emb ]; then
  python3 -m venv .venv-peer
  # click 8.2 breaks infinity-emb 0.0.77's command line (typer): keep 8.1.
  .venv-peer/bin/pip install -q "infinity-emb[server,torch]==0.0.77" "click==8.1.8"
fi
PY=python3
if [ -x .venv-peer/bin/python ]; then
  .venv-peer/bin/python -c "import matplotlib" 2>/dev/null || .venv-peer/bin/pip install -q matplotlib
  PY=.venv-peer/bin/python
fi
cmake --build build --target orchid >/dev/null
exec "$PY" bench/serving/mixed_load.py "$@"

#!/usr/bin/env bash
# Serving benchmark: orchid serve vs gateway+worker vs Infinity, the seed's suites, one run.
# Infinity (a peer a user would pick instead) needs PyTorch, which CI never installs: it lives in
# its own environment, .venv-peer, made here on first use (SKIP_PEER=1 to leave it out), with
# matplotlib for the PNG charts (bench/plots.py draws them with .venv-peer's or .venv-bench's
# Python when the one running run.py has none).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "${SKIP_PEER:-0}" != 1 ] && [ ! -x .venv-peer/bin/infinity_emb ]; then
  python3 -m venv .venv-peer
  # click 8.2 breaks infinity-emb 0.0.77's command line (typer): keep 8.1.
  .venv-peer/bin/pip install -q "infinity-emb[server,torch]==0.0.77" "click==8.1.8"
fi
if [ -x .venv-peer/bin/python ]; then
  .venv-peer/bin/python -c "import matplotlib" 2>/dev/null || .venv-peer/bin/pip install -q matplotlib
fi
cmake --build build --target orchid >/dev/null
exec python3 bench/serving/run.py "$@"

#!/usr/bin/env bash
# Serving benchmark: orchid serve vs gateway+worker vs Infinity, the seed's suites, one run.
# Infinity (a peer a user would pick instead) needs PyTorch, which CI never installs: it lives in
# its own environment, .venv-peer, made here on first use (SKIP_PEER=1 to leave it out).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "${SKIP_PEER:-0}" != 1 ] && [ ! -x .venv-peer/bin/infinity_emb ]; then
  python3 -m venv .venv-peer
  # click 8.2 breaks infinity-emb 0.0.77's command line (typer): keep 8.1.
  .venv-peer/bin/pip install -q "infinity-emb[server,torch]==0.0.77" "click==8.1.8"
fi
cmake --build build --target orchid >/dev/null
exec python3 bench/serving/run.py "$@"

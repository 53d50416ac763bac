#!/usr/bin/env bash
# CPU benchmark: orchid's engine vs sentence-transformers on PyTorch, in one run.
# The peer needs PyTorch, which CI and `make test` never install: this script keeps it in its
# own environment (.venv-bench), or uses BENCH_PYTHON if you already have one with torch and
# sentence-transformers. BENCH_BUILD_DIR picks the build tree (default build/). matplotlib, for
# the PNG charts (bench/plots.py), goes into .venv-bench too.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${BENCH_PYTHON:-}
if [ -z "$PY" ]; then
  if [ ! -x .venv-bench/bin/python ]; then
    python3 -m venv .venv-bench
    .venv-bench/bin/pip install -q numpy tokenizers torch sentence-transformers matplotlib
  fi
  .venv-bench/bin/python -c "import matplotlib" 2>/dev/null || .venv-bench/bin/pip install -q matplotlib
  PY=.venv-bench/bin/python
fi
BUILD_DIR=${BENCH_BUILD_DIR:-build}
cmake --build "$BUILD_DIR" --target orchid_engine_bench >/dev/null
exec "$PY" bench/cpu/engine_vs_torch.py --bench-bin "$BUILD_DIR/orchid_engine_bench" "$@"

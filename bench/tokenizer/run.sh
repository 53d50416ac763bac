#!/usr/bin/env bash
# Tokenizer benchmark (`make bench-tokenizer`): orchid vs Hugging Face tokenizers and
# SentencePiece, single-threaded, in one run; writes bench/results/tokenizer-<date>.md.
# The peers need `tokenizers` and `sentencepiece`: BENCH_PYTHON if set, else a Python that has
# both (the test venv, /work/refenv/venv, .venv-bench), else they are added to .venv-bench.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
has_peers() { "$1" -c 'import tokenizers, sentencepiece' 2>/dev/null; }
PY=${BENCH_PYTHON:-}
if [ -z "$PY" ]; then
  for p in .venv/bin/python /work/refenv/venv/bin/python .venv-bench/bin/python; do
    if [ -x "$p" ] && has_peers "$p"; then PY=$p; break; fi
  done
fi
if [ -z "$PY" ]; then
  [ -x .venv-bench/bin/python ] || python3 -m venv .venv-bench
  .venv-bench/bin/pip install -q tokenizers sentencepiece matplotlib
  PY=.venv-bench/bin/python
fi
cmake --build "$BUILD" --target orchid_tokenizer_bench >/dev/null
exec "$PY" bench/tokenizer/bench.py --bench-bin "$BUILD/orchid_tokenizer_bench" \
  --work "$BUILD/bench-tokenizer" "$@"

#!/usr/bin/env bash
# CLIP ViT-B/16 images/s on the CPU, decode + preprocess + vision tower, orchid serve against
# transformers + Pillow on PyTorch fp32 / bf16 (issue 43); see clip_throughput.py.
#   bench/image/run-clip.sh [--quick] [--threads 2] [--repeat 3]
#   PYTHON= a Python with torch 2.15, transformers 4.57.6, Pillow 13.0.0, requests; NO_BUILD=1 skips the build
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-.venv-peers/bin/python}  # bench/cpu/setup-peers.sh makes it
[ -n "${NO_BUILD:-}" ] || cmake --build build --target orchid >/dev/null
"$PYTHON" bench/image/clip_throughput.py "$@"

#!/usr/bin/env bash
# The peers of bench/cpu/int8_vs_peers.py (issue 31), in their own environment, .venv-peers in the
# repo root, from PyPI only (nothing from the Hugging Face Hub: the benchmark loads every model
# from a local directory):
#   sentence-transformers on PyTorch (fp32, bf16), its ONNX Runtime backend (optimum-onnx: fp32
#   and the dynamic int8 export), its OpenVINO backend (optimum-intel + openvino: f32 and bf16
#   precision hints), CTranslate2 (fp32, int8), matplotlib for the charts.
#
# Versions are pinned to one set pip resolves together. sentence-transformers' ONNX backend needs
# optimum-onnx, whose 0.1.0 (the newest) pins transformers < 4.58, so this environment has
# sentence-transformers 5.7 on transformers 4.57 (sentence-transformers 6.x, transformers 5.x and
# optimum-intel 2.x cannot be installed beside it); their embeddings of these models are the same.
# torch from PyPI is the CUDA build (its nvidia-* wheels come along, ~5 GB in all): PyPI has no
# CPU-only wheel for Linux; the benchmark runs it on the CPU only.
#
#   bench/cpu/setup-peers.sh            # makes .venv-peers once (again if the pins change)
#   PYTHON=python3.11 bench/cpu/setup-peers.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
PINS=(
  "torch==2.15.0"
  "sentence-transformers==5.7.0"
  "transformers==4.57.6"
  "optimum==2.1.0"
  "optimum-onnx[onnxruntime]==0.1.0"
  "onnxruntime==1.32.0"
  "onnx==1.23.2"
  "optimum-intel[openvino]==1.27.0"
  "openvino==2026.4.1"
  "openvino-tokenizers==2026.4.1.0"
  "nncf==3.4.0"
  "ctranslate2==4.8.5"
  "tokenizers==0.22.2"
  "numpy==2.4.6"
  "matplotlib==3.11.2"
)
STAMP=.venv-peers/.installed-$(printf '%s\n' "${PINS[@]}" | sha1sum | cut -c1-12)
if [ -f "$STAMP" ]; then
  echo ".venv-peers is up to date"
  exit 0
fi
PY=${PYTHON:-python3}
[ -x .venv-peers/bin/python ] || "$PY" -m venv .venv-peers
.venv-peers/bin/pip install -q --upgrade pip
.venv-peers/bin/pip install -q "${PINS[@]}"
# Each peer must at least import (the benchmark records a row it cannot run as "not supported").
.venv-peers/bin/python - <<'EOF'
import importlib
for m in ("torch", "sentence_transformers", "onnxruntime", "optimum.onnxruntime", "openvino",
          "optimum.intel", "ctranslate2", "matplotlib"):
    mod = importlib.import_module(m)
    print(f"{m} {getattr(mod, '__version__', '')}")
EOF
rm -f .venv-peers/.installed-*
touch "$STAMP"

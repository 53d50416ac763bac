#!/usr/bin/env bash
# bench/gpu/prepare-serve-carry.sh — run HERE after `make build`: fills build-gpu-serve/
# (git-ignored) with what device-check.sh's serve-http block needs on the GPU machine, whose
# image has none of orchid's Debian libraries (gRPC, protobuf, spdlog, OpenBLAS, oneDNN, ...):
#   bin/orchid        the full binary of BUILD (default build), built with the CUDA backend
#   lib/              its shared libraries from this machine (ldd), except the C library, the
#                     C++ runtime, CUDA's (the GPU machine's PyTorch wheels and driver have
#                     them) and anything under /usr/local/cuda
#   tokenizer/        all-MiniLM-L6-v2's tokenizer files (BERT's uncased vocabulary, which the
#                     random-weight BERT-base there uses)
#   corpus.csv        the STS-B test sentences orchid bench builds its inputs from
# Everything is packed xz-compressed into build-gpu-serve/serve.tar.xz (~25 MB) and only that
# travels: the repository plus this must stay under the device tool's 64 MiB, so it goes in a
# second call (carry=["build-gpu-serve"]) on the machine the first call warmed, with
#   BLOCKS='machine,serve-http' bash bench/gpu/device-check.sh
# (serve-http unpacks it). A binary built on this machine's Debian may not run on the GPU
# machine's image: serve-http then fails with the loader's message, in the log.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
C=build-gpu-serve
[ -x "$BUILD/orchid" ] || { echo "no $BUILD/orchid: make build first" >&2; exit 1; }
grep -q '^ORCHID_CUDA:BOOL=ON' "$BUILD/CMakeCache.txt" ||
  { echo "$BUILD has no CUDA backend (ORCHID_CUDA=OFF)" >&2; exit 1; }
rm -rf "$C"
mkdir -p "$C/stage/bin" "$C/stage/lib" "$C/stage/tokenizer"
cp "$BUILD/orchid" "$C/stage/bin/"
ldd "$BUILD/orchid" | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.*|libm.so.*|libdl.so.*|librt.so.*|libpthread.so.*|ld-linux*|libstdc++.so.*|\
    libgcc_s.so.*|libcuda.so.*|libcudart.so.*|libcublas*|libnvrtc*) continue ;;
  esac
  case "$lib" in /usr/local/cuda*) continue ;; esac
  cp -L "$lib" "$C/stage/lib/"
done
for f in tokenizer.json tokenizer_config.json special_tokens_map.json vocab.txt; do
  [ -f "models/all-MiniLM-L6-v2/$f" ] && cp "models/all-MiniLM-L6-v2/$f" "$C/stage/tokenizer/"
done
CORPUS=${CORPUS:-}
for c in ../shared/data/stsb/stsb-en-test.csv ../../shared/data/stsb/stsb-en-test.csv; do
  [ -n "$CORPUS" ] || { [ -f "$c" ] && CORPUS=$c; }
done
[ -f "$CORPUS" ] || { echo "no STS-B corpus beside the checkout (set CORPUS)" >&2; exit 1; }
cp "$CORPUS" "$C/stage/corpus.csv"
tar -cJf "$C/serve.tar.xz" -C "$C/stage" .
rm -rf "$C/stage"
du -sh "$C"

#!/usr/bin/env bash
# bench/gpu/device-check.sh — the CUDA engine's whole device check, in one call on a lent GPU
# machine (issues 5 and 24). Prepare the carried files here first (bench/gpu/prepare-carry.sh),
# then, through the device tool, from the repo root:
#
#   run(command="BUDGET_S=420 bash bench/gpu/device-check.sh", carry=["build-gpu-carry"],
#       timeout_s=480)
#
# The check is a list of blocks (`bash bench/gpu/device-check.sh --list`), in order of what
# matters most: the build, the CUDA unit tests, fidelity against PyTorch, then memcheck, the
# GEMM peak and the timed suites, torch.compile last. It keeps to a time budget (BUDGET_S,
# default 300 s, RESERVE_S = 10 s of it kept for the last report): a block starts only if the
# time left covers its reservation (the `need` column of the list: guesses made before any run
# on a GPU; the report's `seconds` column gives the measured ones), else it is skipped and says
# so; a block that starts runs under `timeout` for at most the time left (or its own cap), so
# the whole ends within the budget. A block that needs another one's output (the build, the
# models) skips itself when that is missing.
#
# After every block, and from the exit trap (also on SIGTERM/SIGINT), $OUT gets:
#   device-check.md   the report (fidelity, latency, throughput, side by side; blocks last)
#   results.jsonl     every result and every block's status as JSON lines
#   device-check.log  this script's whole output
#   logs.tar.gz       the work logs: configure, build, each gtest run (.log + .xml), memcheck
# (4 files: the device tool returns at most 8.) Models, embeddings and the build stay in
# $WORK_DIR (default /tmp/orchid-gpu-work; a rerun on the same warm machine reuses the build
# and the models).
#
# Exit status 0 when no block failed and every required block (deps, build, unit tests,
# models, fidelity) passed ("DEVICE CHECK: PASS"); else 1: "FAIL" when a block failed (or a
# required one hit its time limit), "INCOMPLETE" when a required block did not run. On the GPU
# machine (DEVICE=cuda, the default) a device test that skips (no device: e.g. a driver older
# than the CUDA 13 runtime; or no model) fails its block.
#
# Environment:
#   BUDGET_S, RESERVE_S   the time budget and the part kept for the final report (s)
#   BLOCKS                only these blocks (comma-separated names or shell patterns, e.g.
#                         "deps,build,unit-*,fid-qwen3-*" for a shorter second run)
#   CARRY_DIR             the carried files (default build-gpu-carry)
#   WORK_DIR, OUT         work folder; report folder (default build-gpu-out when OUT is unset)
#   PYTHON, JOBS          interpreter with PyTorch + transformers; build jobs (default nproc)
#   SANITIZE=0            skip memcheck
#   SERVE_CARRY           the orchid binary + its libraries for serve-http (default
#                         build-gpu-serve: bench/gpu/prepare-serve-carry.sh; a second call, as
#                         it does not fit the first one's 64 MiB with the model)
#   DEVICE=cpu SMALL=1    smoke-test the PyTorch side on a CPU with tiny models (the orchid
#                         steps then fail with "no CUDA device", as they should)
#   DRY_RUN=1             no block runs: each "takes" its reservation on a fake clock (plus
#                         DRY_RUN_SLEEP real seconds), to show which blocks a budget admits and
#                         to test the control flow (tests/gpu/device_check_test.sh)
#   DPKG                  the dpkg to unpack the .deb files with (default dpkg; where none is
#                         found: ar + tar)
set -uo pipefail

SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
ROOT=$(cd "$(dirname "$SELF")/../.." && pwd)
cd "$ROOT" || exit 1
export OUT=${OUT:-$ROOT/build-gpu-out}
BUDGET_S=${BUDGET_S:-300}
RESERVE_S=${RESERVE_S:-10}
CARRY=${CARRY_DIR:-$ROOT/build-gpu-carry}
SERVE=${SERVE_CARRY:-$ROOT/build-gpu-serve}
WORK=${WORK_DIR:-/tmp/orchid-gpu-work}
PREFIX=$WORK/deps
BUILD=$WORK/build
LOGS=$WORK/logs
STATE=$WORK/state.env
M=$WORK/models
JSONL=$OUT/results.jsonl
MINILM=$CARRY/all-MiniLM-L6-v2-bf16
PY=${PYTHON:-python3}
GPUPY="$PY $ROOT/bench/gpu/gpu_check.py"
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
DPKG=${DPKG-dpkg}
DEVICE=${DEVICE:-cuda}
DRY_RUN=${DRY_RUN:-0}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
if [ "${SMALL:-0}" = 1 ]; then
  SMALL_FLAG=--small; VOCAB_BERT=1200; VOCAB_QWEN=1500
else
  SMALL_FLAG=; VOCAB_BERT=30522; VOCAB_QWEN=151669
fi

# The blocks, in the order they run: name, reservation (s: a block starts only with at least
# this much left), cap (s; 0: the time left), what it does. Required blocks (INCOMPLETE when
# they did not run): deps, build, unit-*, models, fid-*.
PLAN="
machine                   5   30  GPU, driver, compilers, tools, cuDNN (PyTorch's wheel)
deps                     10   60  carried .deb files (simdjson, fmt, GoogleTest) + cudnn-frontend -> WORK_DIR/deps
build                    60    0  configure + build the engine-only tree for sm_90 (cuDNN attention compiled in)
unit-ops                 15  120  CUDA unit tests: host checks, row ops, GEMM, cuDNN loading (one process)
unit-attn-cudnn          20  120  attention op check on cuDNN's fused SDPA + its graph replay (own process)
unit-attn-pipelined      15  120  attention op check, the own cp.async-pipelined kernel (own process)
unit-attn-ldmatrix       15  120  attention op check, first kernel, V by ldmatrix.trans (own process)
unit-attn-transposed     15  120  attention op check, first kernel, V stored transposed (own process)
unit-engine              30  180  engine tests on the carried all-MiniLM-L6-v2, cuDNN vs own attention (own process)
fid-minilm               20  120  fidelity: all-MiniLM-L6-v2 (real weights) vs PyTorch bf16
models                   40  180  random-weight BERT-base, XLM-R-base, DistilBERT, Qwen3-0.6B
fid-qwen3-causal         30  150  fidelity: Qwen3-0.6B causal, lengths 1..4096
fid-qwen3-bidir          30  150  fidelity: Qwen3-0.6B bidirectional, lengths 1..4096
fid-bert-base            20  120  fidelity: BERT-base, lengths 1..512
fid-xlmr-base            20  120  fidelity: XLM-R-base, lengths 1..512
fid-distilbert-base      20  120  fidelity: DistilBERT-base (no token types), lengths 1..512
peak                     10   60  the card's bf16 GEMM rate (PyTorch, 8192^3)
profile                  35   90  per-op GPU time, orchid --profile (graphs off, cuDNN attention); PyTorch SDPA/GEMM rates
profile-own              15   60  the throughput profiles again with the own attention kernel (orchid-own TFLOP/s)
suite-orchid-bert-base   25  120  orchid suites, BERT-base, graphs off / lazy
suite-torch-bert-base    25  120  PyTorch eager suites, BERT-base
suite-orchid-qwen3       40  180  orchid suites, Qwen3-0.6B causal (4096 x 16 for throughput)
suite-torch-qwen3        40  150  PyTorch eager suites, Qwen3-0.6B causal
compile-thr-bert-base    90  200  torch.compile throughput 512 x 100, BERT-base (compile time excluded, reported)
compile-bert-base        80  200  torch.compile(mode=reduce-overhead) latency 128, BERT-base
suite-orchid-ab          25   90  orchid throughput A/B: own attention kernel; cuBLASLt GELU epilogue (+ its fidelity)
compile-thr-qwen3       120  240  torch.compile throughput 4096 x 16 and 512 x 100, Qwen3-0.6B causal
serve-http               60  150  orchid serve --device cuda over HTTP, orchid bench suites, BERT-base (serve carry)
suite-orchid-minilm      15   90  orchid latency suite, all-MiniLM-L6-v2, graphs off / lazy
suite-orchid-qwen3-bidir 15   90  orchid latency, Qwen3-0.6B bidirectional, lazy graphs
memcheck                 30   60  compute-sanitizer memcheck on the attention/pooling/RoPE checks
compile-qwen3           140  300  torch.compile(mode=reduce-overhead) latency 128, Qwen3-0.6B
"
REQUIRED="deps build unit-ops unit-attn-cudnn unit-attn-pipelined unit-attn-ldmatrix"
REQUIRED+=" unit-attn-transposed unit-engine models"
REQUIRED+=" fid-minilm fid-qwen3-causal fid-qwen3-bidir fid-bert-base fid-xlmr-base"
REQUIRED+=" fid-distilbert-base"

# ----------------------------------------------------------------------------- helpers

# The clock: seconds since the epoch, or the fake clock of a dry run.
now() {
  if [ -n "${FAKE_CLOCK:-}" ]; then cat "$FAKE_CLOCK"; else date +%s; fi
}
phase() { echo; echo "== [$(( $(now) - START ))s] $*"; }
# state KEY VALUE: shared with later blocks (each block runs in its own process).
state() { printf 'export %s=%q\n' "$1" "$2" >>"$STATE"; }
# skip REASON: the running block skips itself (exit status 3).
skip() { echo "$1" >"$WORK/skip-reason"; echo "SKIP: $1"; exit 3; }
json_str() { local s=${1//\\/\\\\}; s=${s//\"/\\\"}; s=${s//$'\n'/ }; printf '"%s"' "$s"; }

# http_get URL: the body on stdout (curl, or Python where there is no curl); fails on an error.
http_get() {
  if command -v curl >/dev/null 2>&1; then curl -sf --max-time 10 "$1"; return; fi
  $PY -c "import sys, urllib.request as u; sys.stdout.write(u.urlopen(sys.argv[1], timeout=10).read().decode())" \
    "$1" 2>/dev/null
}

find_nvcc() {
  local d
  if command -v nvcc >/dev/null 2>&1; then command -v nvcc; return 0; fi
  for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda /usr/local/cuda-13* /opt/cuda; do
    if [ -n "$d" ] && [ -x "$d/bin/nvcc" ]; then echo "$d/bin/nvcc"; return 0; fi
  done
  return 1
}

require_build() {
  [ "${BUILD_OK:-}" = 1 ] || skip "needs the build (block build: ${BLOCK_build:-did not run})"
}
# Looks the packages up without importing them (an import of torch takes seconds).
require_torch() {
  $PY -c "import importlib.util as u, sys; sys.exit(not (u.find_spec('torch') and
u.find_spec('transformers')))" 2>/dev/null || skip "no PyTorch + transformers for $PY"
}
require_models() {
  [ -f "$M/.done" ] ||
    skip "needs the random-weight models (block models: ${BLOCK_models:-did not run})"
}

# extract_deb FILE DIR: dpkg -x, or ar + tar where there is no dpkg; fails loudly.
extract_deb() {
  local f dir=$2 tmp data
  f=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
  if [ -n "$DPKG" ] && command -v "$DPKG" >/dev/null 2>&1; then
    "$DPKG" -x "$f" "$dir" || { echo "$DPKG -x $f failed"; return 1; }
    return 0
  fi
  tmp=$(mktemp -d "$WORK/deb.XXXXXX") || return 1
  if ! (cd "$tmp" && ar x "$f"); then echo "ar x $f failed"; rm -rf "$tmp"; return 1; fi
  data=$(ls "$tmp"/data.tar* 2>/dev/null | head -1)
  if [ -z "$data" ]; then echo "$f: no data.tar.* inside"; rm -rf "$tmp"; return 1; fi
  if ! tar -xf "$data" -C "$dir"; then
    echo "tar -xf $(basename "$data") of $f failed"; rm -rf "$tmp"; return 1
  fi
  rm -rf "$tmp"
}

# gtest_verdict LOG RC: 0 when the run finished, passed, ran at least one test and (on the GPU
# machine) skipped no device test: a driver older than the runtime makes every device test
# skip, which must not look green. CudaEngineNoDeviceTest skips by design where a GPU is.
gtest_verdict() {
  local log=$1 rc=$2 skipped
  if ! grep -qE '^\[==========\] [1-9][0-9]* tests? from .* ran\.' "$log"; then
    echo "the test binary did not finish a run of at least one test (crash, or no test matched)"
    return 1
  fi
  if [ "$rc" != 0 ]; then echo "tests failed (exit $rc)"; return 1; fi
  if [ "$DEVICE" = cuda ]; then
    skipped=$(grep -E '^\[  SKIPPED \] [A-Za-z_]' "$log" | grep -v 'CudaEngineNoDeviceTest\.' |
              sed -e 's/^\[  SKIPPED \] //' -e 's/ (.*//' | sort -u)
    if [ -n "$skipped" ]; then
      echo "device tests SKIPPED on the GPU machine (this fails the check):"
      echo "$skipped" | sed 's/^/  /'
      grep -E 'no CUDA device|no model at' "$log" | sort -u | head -3
      return 1
    fi
  fi
  return 0
}

# run_gtest NAME FILTER: one process of the CUDA test binary; log + xml in the logs.
run_gtest() {
  local name=$1 filter=$2 rc
  ORCHID_CUDA_TEST_MODEL=$MINILM "$BUILD/orchid_cuda_tests" --gtest_filter="$filter" \
    --gtest_output="xml:$LOGS/$name.xml" >"$LOGS/$name.log" 2>&1
  rc=$?
  grep -E '^\[  (FAILED|PASSED) |^\[==========\] .* ran|Failure|error|element|row |no CUDA device' \
    "$LOGS/$name.log" | awk '!seen[$0]++' | head -60
  gtest_verdict "$LOGS/$name.log" "$rc"
}

# fidelity NAME DIR KIND POOLING IDS [TORCH ARGS...]: orchid vs PyTorch bf16 on the ids file.
fidelity() {
  local name=$1 dir=$2 kind=$3 pooling=$4 ids=$5 ok=0
  shift 5
  require_build
  [ -f "$dir/model.safetensors" ] || skip "no model at $dir"
  require_torch
  rm -f "$WORK/ours-$name.npy" "$WORK/ref-$name.npy"  # never compare an earlier run's files
  if ! "$BUILD/orchid_cuda_check" embed --model "$dir" --ids "$ids" \
      --out "$WORK/ours-$name.npy" --pooling "$pooling" --normalize 1; then
    echo "FAILED: $name: orchid embed"; ok=1
  fi
  if ! $GPUPY torch --model "$dir" --kind "$kind" --name "$name" --pooling "$pooling" \
      --ids "$ids" --ref-out "$WORK/ref-$name.npy" --device "$DEVICE" \
      --deadline "$(( $(now) + LIMIT - 5 ))" "$@" | tee -a "$JSONL"; then
    echo "FAILED: $name: PyTorch side"; ok=1
  fi
  if ! $GPUPY compare --ours "$WORK/ours-$name.npy" --ref "$WORK/ref-$name.npy" --name "$name" \
      --min-cos 0.999 | tee -a "$JSONL"; then
    echo "FAILED: $name: fidelity below 0.999"; ok=1
  fi
  return $ok
}

# orchid_suites NAME DIR POOLING MODES ARGS...: orchid_cuda_check bench per graph mode.
orchid_suites() {
  local name=$1 dir=$2 pooling=$3 modes=$4 g ok=0
  shift 4
  require_build
  [ -f "$dir/model.safetensors" ] || skip "no model at $dir"
  for g in $modes; do
    echo "-- $name: graphs $g"
    if ! "$BUILD/orchid_cuda_check" bench --model "$dir" --name "$name/orchid-graphs-$g${SUITE_TAG:-}" \
        --graphs "$g" --pooling "$pooling" "$@" | tee -a "$JSONL"; then
      echo "FAILED: $name: orchid suites (graphs $g)"; ok=1
    fi
  done
  return $ok
}

# torch_suites NAME DIR KIND POOLING ARGS...: PyTorch eager / torch.compile suites.
torch_suites() {
  local name=$1 dir=$2 kind=$3 pooling=$4
  shift 4
  [ -f "$dir/model.safetensors" ] || skip "no model at $dir"
  require_torch
  $GPUPY torch --model "$dir" --kind "$kind" --name "$name" --pooling "$pooling" \
    --device "$DEVICE" --deadline "$(( $(now) + LIMIT - 5 ))" "$@" | tee -a "$JSONL"
}

# ----------------------------------------------------------------------------- blocks
# blk_NAME (dashes as underscores) runs in its own process (bash device-check.sh --block NAME
# LIMIT) under `timeout LIMIT`: exit 0 pass, 3 skipped (reason in $WORK/skip-reason), else
# fail. State for later blocks goes through `state`.

blk_machine() {
  local m nvcc
  timeout 15 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm \
    --format=csv,noheader || echo "nvidia-smi: not found or failed"
  m=$(timeout 15 nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null |
      head -1)
  [ -n "$m" ] && state MACHINE "$m"
  timeout 15 nvidia-smi 2>/dev/null | grep -m1 "CUDA Version" || true
  if nvcc=$(find_nvcc); then "$nvcc" --version | tail -2; else echo "nvcc: not found"; fi
  cmake --version 2>/dev/null | head -1 || echo "cmake: not found"
  ninja --version 2>/dev/null || echo "ninja: not found"
  gcc --version 2>/dev/null | head -1 || echo "gcc: not found"
  $PY --version 2>&1
  echo "cores: $(nproc), kernel: $(uname -r)"
  for t in dpkg ar tar compute-sanitizer; do
    printf '%s: %s\n' "$t" "$(command -v "$t" || echo 'not found')"
  done
  # cuDNN: PyTorch's wheel (headers + libcudnn.so.9), what the build compiles against and the
  # engine dlopens; or a system cuDNN 9 beside the CUDA toolkit.
  local root
  root=$($PY -c "import nvidia.cudnn as c, os; print(list(c.__path__)[0])" 2>/dev/null)
  if [ -n "$root" ] && [ -f "$root/include/cudnn_version.h" ]; then
    echo "cuDNN (PyTorch's wheel): $root, $(grep -hE '^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) ' \
      "$root/include/cudnn_version.h" | awk '{printf "%s%s", sep, $3; sep="."}')"
    state CUDNN_ROOT "$root"
  else
    echo "cuDNN: no nvidia.cudnn wheel with headers for $PY; CMake looks beside the CUDA toolkit"
  fi
  $PY -c "import torch; print('torch', torch.__version__, 'cudnn', torch.backends.cudnn.version())" \
    2>/dev/null || true
  return 0
}

blk_deps() {
  local f dir lib pkg
  ls "$CARRY"/debs/*.deb >/dev/null 2>&1 ||
    { echo "no $CARRY/debs/*.deb: run bench/gpu/prepare-carry.sh here first"; return 1; }
  rm -rf "$PREFIX"
  mkdir -p "$PREFIX"
  if [ -z "$DPKG" ] || ! command -v "$DPKG" >/dev/null 2>&1; then
    echo "no dpkg (DPKG=$DPKG): unpacking with ar + tar"
  fi
  for f in "$CARRY"/debs/*.deb; do
    extract_deb "$f" "$PREFIX" || return 1
    echo "unpacked $(basename "$f")"
  done
  # The packages' CMake config folders, found wherever their multiarch path puts them (no
  # reliance on CMAKE_LIBRARY_ARCHITECTURE), handed to cmake one by one.
  for pkg in simdjson:simdjson-config.cmake fmt:fmt-config.cmake GTest:GTestConfig.cmake; do
    f=$(find "$PREFIX" -name "${pkg#*:}" 2>/dev/null | head -1)
    [ -n "$f" ] || { echo "no ${pkg#*:} in the unpacked packages"; return 1; }
    dir=$(dirname "$f")
    echo "${pkg%%:*}_DIR=$dir"
    state "DEP_${pkg%%:*}_DIR" "$dir"
  done
  lib=$(find "$PREFIX" -name 'libsimdjson.so*' 2>/dev/null | head -1)
  [ -n "$lib" ] || { echo "no libsimdjson.so* in the unpacked packages"; return 1; }
  state DEPS_LIBDIR "$(dirname "$lib")"
  # cudnn-frontend's headers (scripts/fetch-cudnn-frontend.sh --tar, via prepare-carry.sh).
  if [ -f "$CARRY/cudnn-frontend.tar.gz" ]; then
    mkdir -p "$PREFIX/cudnn-frontend"
    tar -xzf "$CARRY/cudnn-frontend.tar.gz" -C "$PREFIX/cudnn-frontend" ||
      { echo "cannot unpack $CARRY/cudnn-frontend.tar.gz"; return 1; }
    echo "cudnn-frontend: $(grep -hE 'define CUDNN_FRONTEND_(MAJOR|MINOR|PATCH)_VERSION' \
      "$PREFIX/cudnn-frontend/include/cudnn_frontend_version.h" | awk '{printf "%s%s", sep, $3; sep="."}')"
    state FE_INCLUDE "$PREFIX/cudnn-frontend/include"
  else
    echo "no $CARRY/cudnn-frontend.tar.gz: the build has no cuDNN attention (unit-attn-cudnn fails)"
  fi
}

blk_build() {
  local nvcc gen=Ninja
  if [ -z "${DEP_simdjson_DIR:-}" ] || [ -z "${DEP_fmt_DIR:-}" ] ||
      [ -z "${DEP_GTest_DIR:-}" ]; then
    skip "needs the unpacked packages (block deps: ${BLOCK_deps:-did not run})"
  fi
  nvcc=$(find_nvcc) || { echo "no nvcc on PATH, in CUDA_HOME or in /usr/local/cuda*"; return 1; }
  command -v ninja >/dev/null 2>&1 || gen="Unix Makefiles"
  if [ -f "$BUILD/CMakeCache.txt" ] &&
      ! grep -q "^CMAKE_GENERATOR:INTERNAL=$gen$" "$BUILD/CMakeCache.txt"; then
    rm -rf "$BUILD"
  fi
  echo "nvcc: $nvcc; generator: $gen; jobs: $JOBS"
  # Warnings are not errors here (ORCHID_WERROR=OFF, nvcc's --Werror follows it): a newer nvcc
  # or another host compiler must not abort the check. The normal build keeps them errors.
  if ! cmake -S . -B "$BUILD" -G "$gen" -DCMAKE_BUILD_TYPE=Release -DORCHID_ENGINE_ONLY=ON \
      -DORCHID_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES=90 \
      -DORCHID_WERROR=OFF -DORCHID_NATIVE=ON \
      -Dsimdjson_DIR="$DEP_simdjson_DIR" -Dfmt_DIR="$DEP_fmt_DIR" -DGTest_DIR="$DEP_GTest_DIR" \
      -DCMAKE_PREFIX_PATH="$PREFIX/usr" -DCMAKE_POLICY_VERSION_MINIMUM=3.5 \
      ${FE_INCLUDE:+-DORCHID_CUDNN_FRONTEND_INCLUDE="$FE_INCLUDE"} \
      ${CUDNN_ROOT:+-DORCHID_CUDNN_ROOT="$CUDNN_ROOT"} \
      >"$LOGS/configure.log" 2>&1; then
    tail -40 "$LOGS/configure.log"
    echo "configure failed"; return 1
  fi
  grep -E "^(simdjson_DIR|fmt_DIR|GTest_DIR|CMAKE_CUDA_COMPILER):" "$BUILD/CMakeCache.txt"
  grep -E "cuDNN attention" "$LOGS/configure.log"
  if ! cmake --build "$BUILD" -j "$JOBS" --target orchid_cuda_tests orchid_cuda_check \
      >"$LOGS/build.log" 2>&1; then
    grep -E "error|FAILED" "$LOGS/build.log" | head -40
    echo "build failed"; return 1
  fi
  grep -ciE "warning" "$LOGS/build.log" | sed 's/$/ warning lines (build.log in logs.tar.gz)/'
  tail -1 "$LOGS/build.log"
  state BUILD_OK 1
}

blk_unit_ops() {
  require_build
  run_gtest unit-ops \
    '-CudaOpsTest.RaggedFlashAttention*:CudaOpsTest.RaggedCudnnAttention:CudaOpsTest.CudnnAttention*:CudaEngineTest.*'
}

# cuDNN's fused attention against the double-precision reference and in a captured graph, with
# ORCHID_REQUIRE_CUDNN=1: a cuDNN that does not load fails here instead of skipping. If it
# fails, later blocks run attention on the own kernel (ORCHID_CUDNN_ATTENTION=0), so that the
# rest of the check still measures something; the failure still fails the check.
blk_unit_attn_cudnn() {
  require_build
  if ! ORCHID_REQUIRE_CUDNN=1 run_gtest unit-attn-cudnn \
      'CudaOpsTest.RaggedCudnnAttention:CudaOpsTest.CudnnAttentionReplaysInACapturedGraph:CudnnLibraryTest.*'; then
    echo "cuDNN attention failed: ORCHID_CUDNN_ATTENTION=0 (own kernel) from here on"
    state ORCHID_CUDNN_ATTENTION 0
    return 1
  fi
}

# The attention kernel has three variants (attention.cu); each check runs in its own process,
# so that an illegal address in one (which poisons the CUDA context for the rest of a process)
# cannot hide another's result. Later blocks use the first variant that passed, in the order
# pipelined (the default), ldmatrix, transpose (ORCHID_CUDA_ATTENTION); a failure still fails
# the check.
blk_unit_attn_pipelined() {
  require_build
  run_gtest unit-attn-pipelined 'CudaOpsTest.RaggedFlashAttentionPipelined'
}

blk_unit_attn_ldmatrix() {
  require_build
  run_gtest unit-attn-ldmatrix 'CudaOpsTest.RaggedFlashAttentionLdmatrix' || return 1
  if [ "${BLOCK_unit_attn_pipelined:-}" = fail ]; then
    echo "pipelined attention failed, ldmatrix passed: ORCHID_CUDA_ATTENTION=ldmatrix from here on"
    state ORCHID_CUDA_ATTENTION ldmatrix
  fi
}

blk_unit_attn_transposed() {
  require_build
  run_gtest unit-attn-transposed 'CudaOpsTest.RaggedFlashAttentionTransposed' || return 1
  if [ "${BLOCK_unit_attn_pipelined:-}" = fail ] && [ "${BLOCK_unit_attn_ldmatrix:-}" = fail ]; then
    echo "pipelined and ldmatrix attention failed, transposed passed:" \
      "ORCHID_CUDA_ATTENTION=transpose from here on"
    state ORCHID_CUDA_ATTENTION transpose
  fi
}

blk_unit_engine() {
  require_build
  [ -f "$MINILM/model.safetensors" ] ||
    { echo "no $MINILM: make model, then bench/gpu/prepare-carry.sh"; return 1; }
  if [ "${ORCHID_CUDNN_ATTENTION:-}" = 0 ]; then
    run_gtest unit-engine 'CudaEngineTest.*'
  else
    ORCHID_REQUIRE_CUDNN=1 run_gtest unit-engine 'CudaEngineTest.*'
  fi
}

blk_fid_minilm() {
  [ -f "$MINILM/model.safetensors" ] || skip "all-MiniLM-L6-v2 was not carried"
  require_build
  $GPUPY ids --out "$WORK/ids-minilm.txt" --vocab 30522 --lengths 1,2,17,128,256 --seed 2 ||
    return 1
  fidelity all-MiniLM-L6-v2 "$MINILM" bert mean "$WORK/ids-minilm.txt"
}

blk_models() {
  require_torch
  $GPUPY ids --out "$WORK/ids-bert.txt" --vocab $VOCAB_BERT --lengths 1,7,64,130,333,512 --seed 1 &&
    $GPUPY ids --out "$WORK/ids-qwen.txt" --vocab $VOCAB_QWEN --lengths 1,7,64,130,1000,4096 \
      --seed 3 || return 1
  if [ -f "$M/.done" ]; then echo "models already made in $M (same machine)"; return 0; fi
  rm -rf "$M"
  $GPUPY make-models --out "$M" --device "$DEVICE" $SMALL_FLAG || return 1
  touch "$M/.done"
}

blk_fid_qwen3_causal() {
  require_models
  fidelity qwen3-0.6b-causal "$M/qwen3-0.6b-causal" qwen3 last "$WORK/ids-qwen.txt"
}
blk_fid_qwen3_bidir() {
  require_models
  fidelity qwen3-0.6b-bidir "$M/qwen3-0.6b-bidir" qwen3 mean "$WORK/ids-qwen.txt" --bidir
}
blk_fid_bert_base() {
  require_models
  fidelity bert-base "$M/bert-base" bert mean "$WORK/ids-bert.txt"
}
blk_fid_xlmr_base() {
  require_models
  fidelity xlmr-base "$M/xlmr-base" bert mean "$WORK/ids-bert.txt"
}
# An encoder without token types (issue 33): its embedding op runs without the type table.
blk_fid_distilbert_base() {
  require_models
  fidelity distilbert-base "$M/distilbert-base" bert mean "$WORK/ids-bert.txt"
}

blk_memcheck() {
  local rc
  [ "${SANITIZE:-1}" = 1 ] || skip "SANITIZE=0"
  require_build
  command -v compute-sanitizer >/dev/null 2>&1 || skip "no compute-sanitizer on PATH"
  local filter='CudaOpsTest.RaggedFlashAttention*:CudaOpsTest.PoolNormalizeRagged'
  filter+=':CudaOpsTest.QkNormRopeNeox'
  timeout $(( LIMIT - 5 )) compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$BUILD/orchid_cuda_tests" --gtest_filter="$filter" >"$LOGS/memcheck.log" 2>&1
  rc=$?
  grep -E "ERROR SUMMARY|Invalid|out of bounds|PASSED|FAILED" "$LOGS/memcheck.log" | head -20
  if grep -q "Device not supported" "$LOGS/memcheck.log"; then
    skip "compute-sanitizer does not support the device here (seen on gVisor machines)"
  fi
  case $rc in
    0) echo "memcheck: clean" ;;
    124)
      if grep -qE "Invalid|out of bounds|misaligned" "$LOGS/memcheck.log"; then
        echo "memcheck: stopped at its time cap, after reporting errors"; return 1
      fi
      echo "memcheck: stopped at its time cap (no error seen before)" ;;
    9) echo "memcheck: memory errors"; tail -30 "$LOGS/memcheck.log"; return 1 ;;
    *)
      echo "memcheck: exit $rc (tests failed under the sanitizer?)"
      tail -30 "$LOGS/memcheck.log"; return 1 ;;
  esac
}

blk_peak() {
  [ "$DEVICE" = cuda ] || skip "DEVICE=$DEVICE"
  require_torch
  $GPUPY peak | tee -a "$JSONL"
}

blk_suite_orchid_minilm() {
  orchid_suites all-MiniLM-L6-v2 "$MINILM" mean "off lazy" --latency 128 --iters 100
}
blk_suite_orchid_bert_base() {
  require_models
  orchid_suites bert-base "$M/bert-base" mean "off lazy" --latency 128,512 --throughput 512 \
    --sweep 16,32,64,256
}
blk_suite_torch_bert_base() {
  require_models
  torch_suites bert-base "$M/bert-base" bert mean --latency 128,512 --throughput 512
}
blk_suite_orchid_qwen3() {
  require_models
  orchid_suites qwen3-0.6b-causal "$M/qwen3-0.6b-causal" last "off lazy" \
    --latency 128,512,4096 --throughput 512,1024,4096x16 --sweep 16,32,64,256,1024,2048
}
blk_suite_torch_qwen3() {
  require_models
  torch_suites qwen3-0.6b-causal "$M/qwen3-0.6b-causal" qwen3 last --latency 128,512,4096 \
    --throughput 512,1024,4096x16
}
blk_suite_orchid_qwen3_bidir() {
  require_models
  orchid_suites qwen3-0.6b-bidir "$M/qwen3-0.6b-bidir" mean lazy --latency 128
}
# Where the GPU time goes: orchid's per-op profile (cudaEvents around each op, graphs off) for
# the two throughput gaps (BERT-base 100 x 512, Qwen3-0.6B causal 16 x 4096) and their batch-1
# latencies, then PyTorch's own attention / GEMM / element-wise rates at the same shapes
# (gpu_check.py attn). Either half runs without the other (no build, or no PyTorch).
orchid_profile() {
  local name=$1 dir=$2 pooling=$3
  shift 3
  [ -f "$dir/model.safetensors" ] || { echo "no model at $dir"; return 1; }
  echo "-- $name: per-op profile${PROFILE_TAG:-}"
  "$BUILD/orchid_cuda_check" bench --model "$dir" --name "$name/orchid-graphs-off${PROFILE_TAG:-}" \
    --graphs off --pooling "$pooling" --profile "$@" | tee -a "$JSONL"
}
blk_profile() {
  local ok=0 ran=0
  require_models
  if [ "${BUILD_OK:-}" = 1 ]; then
    ran=1
    orchid_profile bert-base "$M/bert-base" mean --throughput 512 --latency 128 || ok=1
    orchid_profile qwen3-0.6b-causal "$M/qwen3-0.6b-causal" last --throughput 4096x16 \
      --latency 4096 || ok=1
  else
    echo "no build (block build: ${BLOCK_build:-did not run}): orchid's profile not run"
  fi
  if $PY -c "import importlib.util as u, sys; sys.exit(not u.find_spec('torch'))" 2>/dev/null; then
    ran=1
    echo "-- PyTorch SDPA / GEMM / element-wise rates at the profiled shapes"
    $GPUPY attn --device "$DEVICE" $SMALL_FLAG | tee -a "$JSONL" || ok=1
  else
    echo "no PyTorch for $PY: the reference rates not run"
  fi
  (( ran )) || skip "needs the build or PyTorch (neither is here)"
  return $ok
}

# The same throughput profiles with the own attention kernel (ORCHID_CUDNN_ATTENTION=0): the
# cuDNN attention against it on one machine, in one run (orchid-cuDNN vs orchid-own TFLOP/s).
blk_profile_own() {
  local ok=0
  require_models
  require_build
  [ "${ORCHID_CUDNN_ATTENTION:-}" != 0 ] ||
    skip "attention is on the own kernel already (cuDNN failed its check): see profile"
  ORCHID_CUDNN_ATTENTION=0 PROFILE_TAG=-own-attn orchid_profile bert-base \
    "$M/bert-base" mean --throughput 512 || ok=1
  ORCHID_CUDNN_ATTENTION=0 PROFILE_TAG=-own-attn orchid_profile qwen3-0.6b-causal \
    "$M/qwen3-0.6b-causal" last --throughput 4096x16 || ok=1
  return $ok
}

# A/B of the switches at the throughput shapes (lazy graphs): attention on the own kernel
# (suffix -own), and cuBLASLt's fused bias + GELU epilogue (tanh approximation, suffix
# -ltgelu) with its fidelity against PyTorch's exact GELU on BERT-base.
blk_suite_orchid_ab() {
  local ok=0
  require_models
  require_build
  if [ "${ORCHID_CUDNN_ATTENTION:-}" != 0 ]; then
    ORCHID_CUDNN_ATTENTION=0 SUITE_TAG=-own orchid_suites bert-base "$M/bert-base" mean lazy \
      --throughput 512 || ok=1
    ORCHID_CUDNN_ATTENTION=0 SUITE_TAG=-own orchid_suites qwen3-0.6b-causal \
      "$M/qwen3-0.6b-causal" last lazy --throughput 4096x16,512 || ok=1
  fi
  ORCHID_CUDA_GELU=cublaslt SUITE_TAG=-ltgelu orchid_suites bert-base "$M/bert-base" mean lazy \
    --throughput 512 --latency 128 || ok=1
  ORCHID_CUDA_GELU=cublaslt fidelity bert-base-ltgelu "$M/bert-base" bert mean \
    "$WORK/ids-bert.txt" || ok=1
  return $ok
}

# torch.compile throughput (default mode, static shapes): the first batch compiles and is
# not timed; its seconds are reported ("compile_s").
blk_compile_thr_bert_base() {
  [ -z "$SMALL_FLAG" ] || skip "SMALL=1"
  require_models
  torch_suites bert-base "$M/bert-base" bert mean --compile-throughput 512 --compile-margin 60
}
blk_compile_thr_qwen3() {
  [ -z "$SMALL_FLAG" ] || skip "SMALL=1"
  require_models
  torch_suites qwen3-0.6b-causal "$M/qwen3-0.6b-causal" qwen3 last \
    --compile-throughput 4096x16,512 --compile-margin 90
}

# orchid serve --device cuda (the full binary, built on the build machine and carried with its
# libraries: bench/gpu/prepare-serve-carry.sh) on the random-weight BERT-base with
# all-MiniLM-L6-v2's tokenizer (the same BERT uncased vocabulary), and orchid bench's
# throughput (100 x 512, 4 clients) and latency (128) suites over HTTP; the engine's offline
# ceiling for the same shapes is suite-orchid-bert-base's (orchid_cuda_check, lazy graphs).
blk_serve_http() {
  local port=18093 pid i ok=0 lib
  require_models
  local S=$WORK/serve
  if [ ! -x "$S/bin/orchid" ]; then
    [ -f "$SERVE/serve.tar.xz" ] ||
      skip "no $SERVE/serve.tar.xz: bench/gpu/prepare-serve-carry.sh, then a call with carry=[\"build-gpu-serve\"]"
    mkdir -p "$S" && tar -xJf "$SERVE/serve.tar.xz" -C "$S" || { echo "cannot unpack the serve carry"; return 1; }
  fi
  cp -n "$S"/tokenizer/* "$M/bert-base/" 2>/dev/null
  lib=$S/lib
  # CUDA's libraries and cuDNN from PyTorch's wheels, and the toolkit's (cuBLASLt, the runtime).
  for m in nvidia.cudnn nvidia.cublas nvidia.cuda_runtime nvidia.cu13; do
    d=$($PY -c "import $m as c; print(list(c.__path__)[0])" 2>/dev/null) && lib+=":$d/lib"
  done
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib; do [ -d "$d" ] && lib+=":$d"; done
  LD_LIBRARY_PATH=$lib:${LD_LIBRARY_PATH:-} "$S/bin/orchid" serve --model "$M/bert-base" \
    --device cuda --host 127.0.0.1 --port $port --max-batch-tokens 16384 \
    >"$LOGS/serve.log" 2>&1 &
  pid=$!
  for i in $(seq 1 60); do
    http_get "http://127.0.0.1:$port/health" >/dev/null && break
    kill -0 $pid 2>/dev/null || break
    sleep 1
  done
  if ! http_get "http://127.0.0.1:$port/info" >"$WORK/serve-info.json"; then
    tail -20 "$LOGS/serve.log"; kill $pid 2>/dev/null; echo "orchid serve did not come up"; return 1
  fi
  grep -o '"engine":{[^}]*}' "$WORK/serve-info.json"
  rm -f "$WORK/serve-bench.jsonl"
  LD_LIBRARY_PATH=$lib:${LD_LIBRARY_PATH:-} "$S/bin/orchid" bench \
    --target "http://127.0.0.1:$port" --label orchid-http --model "$M/bert-base" \
    --reference none --corpus "$S/corpus.csv" --suite throughput --suite latency \
    --throughput-lengths 512 --throughput-batches 4 --latency-lengths 128 \
    --latency-requests 100 --out "$WORK/serve-bench.jsonl" || ok=1
  kill $pid 2>/dev/null
  wait $pid 2>/dev/null
  # orchid bench's rows as the report's (impl bert-base/orchid-http).
  $PY - "$WORK/serve-bench.jsonl" <<'PYEOF' | tee -a "$JSONL"
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    out = {"impl": "bert-base/orchid-http", "suite": r["suite"], "len": r["length"],
           "batch": r["batch"], "clients": r["clients"]}
    if r["suite"] == "throughput":
        out.update(emb_per_s=r["embeddings_per_s"], tokens_per_s=r["embeddings_per_s"] * r["length"])
    else:
        out.update(iters=r["requests"], p50_ms=r["p50_ms"], p90_ms=r["p90_ms"], p99_ms=r["p99_ms"],
                   max_ms=r["max_ms"])
    print(json.dumps(out))
PYEOF
  return $ok
}

blk_compile_bert_base() {
  [ -z "$SMALL_FLAG" ] || skip "SMALL=1"
  require_models
  torch_suites bert-base "$M/bert-base" bert mean --compile-latency 128 --compile-margin 90
}
blk_compile_qwen3() {
  [ -z "$SMALL_FLAG" ] || skip "SMALL=1"
  require_models
  torch_suites qwen3-0.6b-causal "$M/qwen3-0.6b-causal" qwen3 last --compile-latency 128 \
    --compile-margin 150
}

# ----------------------------------------------------------------------------- driver

selected() {
  local pat
  [ -z "${BLOCKS:-}" ] && return 0
  for pat in ${BLOCKS//,/ }; do
    # shellcheck disable=SC2053
    [[ $1 == $pat ]] && return 0
  done
  return 1
}

# record NAME STATUS SECONDS LIMIT NOTE: one block line in results.jsonl and in the state.
record() {
  printf '{"impl": "block", "block": "%s", "status": "%s", "seconds": %s, "limit_s": %s, ' \
    "$1" "$2" "$3" "$4" >>"$JSONL"
  printf '"note": %s}\n' "$(json_str "$5")" >>"$JSONL"
  state "BLOCK_${1//-/_}" "$2"
  STATUSES+=("$1:$2")
}

machine_label() {
  local m=${MACHINE:-unknown GPU}
  [ "$DRY_RUN" = 1 ] && m="dry run (no block ran)"
  echo "$m, $(date -u +%Y-%m-%d), budget ${BUDGET_S}s"
}

# snapshot: the report and the logs into $OUT, after every block and at exit.
snapshot() {
  $GPUPY report --jsonl "$JSONL" --out "$OUT/device-check.md" --machine "$(machine_label)" \
    --quiet || echo "(report failed)"
  if tar -czf "$WORK/logs.tar.gz" -C "$WORK" logs 2>/dev/null; then
    mv -f "$WORK/logs.tar.gz" "$OUT/logs.tar.gz"
  else
    echo "(log archive failed)"
  fi
}

run_block() {
  local name=$1 need=$2 cap=$3 what=$4 t0 left limit rc status note secs
  t0=$(now)
  left=$(( DEADLINE - t0 - RESERVE_S ))
  phase "$name: $what (${left}s left)"
  if ! selected "$name"; then
    echo "SKIPPED: not selected (BLOCKS=$BLOCKS)"
    record "$name" skipped 0 0 "not selected (BLOCKS=$BLOCKS)"
    snapshot; return
  fi
  if (( left < need )); then
    echo "SKIPPED: time budget (${left}s left, reserves ${need}s)"
    record "$name" skipped 0 0 "time budget: ${left}s left, reserves ${need}s"
    snapshot; return
  fi
  limit=$left
  (( cap > 0 && cap < limit )) && limit=$cap
  CURRENT=$name CURRENT_T0=$t0 CURRENT_LIMIT=$limit
  rm -f "$WORK/skip-reason"
  if [ "$DRY_RUN" = 1 ]; then
    echo $(( $(now) + need )) >"$FAKE_CLOCK"
    sleep "${DRY_RUN_SLEEP:-0}" &
    CHILD=$!
    wait "$CHILD"
    rc=$?
    (( rc == 0 )) && rc=100
  else
    # timeout puts itself and the block in a process group of their own: on expiry, or from
    # the exit trap, the whole block goes.
    timeout -k 5 "$limit" bash "$SELF" --block "$name" "$limit" &
    CHILD=$!
    wait "$CHILD"
    rc=$?
  fi
  CHILD='' CURRENT=''
  secs=$(( $(now) - t0 ))
  note=
  case $rc in
    0) status=pass ;;
    100) status=dry-run; note="reserved ${need}s" ;;
    3) status=skipped; note=$(cat "$WORK/skip-reason" 2>/dev/null) ;;
    124 | 137) status=stopped; note="stopped at its ${limit}s limit" ;;
    *) status=fail; note="exit $rc" ;;
  esac
  echo "-- $name: $status${note:+ ($note)} in ${secs}s"
  record "$name" "$status" "$secs" "$limit" "$note"
  # shellcheck disable=SC1090
  . "$STATE"
  snapshot
}

required() { [[ " $REQUIRED " == *" $1 "* ]]; }

# verdict: PASS, FAIL (a block failed, or a required one was stopped at its time limit) or
# INCOMPLETE (a required block skipped, killed with the run, or never reached); exit status 0
# for PASS only.
verdict() {
  local s name st failed="" missing=""
  for s in "${STATUSES[@]}"; do
    name=${s%%:*} st=${s#*:}
    case $st in
      pass) ;;
      fail) failed+=" $name" ;;
      stopped) if required "$name"; then failed+=" $name"; fi ;;
      *) if required "$name"; then missing+=" $name"; fi ;;
    esac
  done
  for name in $REQUIRED; do  # never reached (a killed run)
    [[ " ${STATUSES[*]} " == *" $name:"* ]] || missing+=" $name"
  done
  if [ -n "$failed" ]; then echo "FAIL (failed:$failed)"; return 1; fi
  if [ -n "$missing" ]; then echo "INCOMPLETE (did not pass:$missing)"; return 1; fi
  echo PASS
}

on_signal() {
  # The tool that sends the signal may have killed tee too: a write to it must not kill us.
  trap '' PIPE
  echo
  echo "== killed by SIG$1 at $(( $(now) - START ))s"
  KILLED=$1
  exit 143
}

on_exit() {
  local v code
  trap - EXIT TERM INT HUP
  trap '' PIPE
  if [ -n "${CHILD:-}" ]; then
    kill -TERM -- "-$CHILD" 2>/dev/null || kill -TERM "$CHILD" 2>/dev/null
    wait "$CHILD" 2>/dev/null
  fi
  if [ -n "${CURRENT:-}" ]; then
    record "$CURRENT" killed $(( $(now) - CURRENT_T0 )) "$CURRENT_LIMIT" \
      "run killed (SIG${KILLED:-?})"
  fi
  snapshot
  # If tee is gone (killed with us), the last lines go straight to the log.
  if [ -n "${TEE_PID:-}" ] && ! kill -0 "$TEE_PID" 2>/dev/null; then
    exec >>"$OUT/device-check.log" 2>&1
  fi
  phase "report"
  cat "$OUT/device-check.md" 2>/dev/null
  v=$(verdict)
  code=$?
  local killed_note=${KILLED:+, killed by SIG$KILLED}
  echo "time used: $(( $(now) - START ))s of the ${BUDGET_S}s budget$killed_note"
  echo "DEVICE CHECK: $v"
  # Let tee write the last lines before the device tool collects $OUT.
  exec >&- 2>&-
  [ -n "${TEE_PID:-}" ] && wait "$TEE_PID" 2>/dev/null
  exit "$code"
}

main() {
  mkdir -p "$OUT" "$WORK" || exit 1
  rm -rf "$LOGS" "$WORK/skip-reason"
  mkdir -p "$LOGS"
  : >"$STATE"
  : >"$JSONL"
  rm -f "$OUT/device-check.md" "$OUT/logs.tar.gz"
  exec > >(tee "$OUT/device-check.log") 2>&1
  TEE_PID=$!
  if [ "$DRY_RUN" = 1 ]; then
    export FAKE_CLOCK=$WORK/fake-clock
    date +%s >"$FAKE_CLOCK"
  fi
  START=$(now)
  DEADLINE=$((START + BUDGET_S))
  export START DEADLINE
  STATUSES=()
  CHILD='' CURRENT='' KILLED=
  trap on_exit EXIT
  trap 'on_signal TERM' TERM
  trap 'on_signal INT' INT
  trap 'on_signal HUP' HUP
  echo "device check: budget ${BUDGET_S}s (${RESERVE_S}s kept for the report), out $OUT," \
    "work $WORK${BLOCKS:+, blocks $BLOCKS}$([ "$DRY_RUN" = 1 ] && echo ', DRY RUN')"
  local name need cap what
  while read -r -u 9 name need cap what; do
    [ -n "$name" ] || continue
    run_block "$name" "$need" "$cap" "$what"
  done 9<<<"$PLAN"
  exit 0  # the verdict and the exit status come from on_exit
}

case "${1:-}" in
  --list)
    echo "$PLAN" | sed '/^$/d'
    ;;
  --block)
    # One block, in its own process (see run_block).
    NAME=$2 LIMIT=${3:-60}
    # shellcheck disable=SC1090
    . "$STATE"
    [ -n "${DEPS_LIBDIR:-}" ] && export LD_LIBRARY_PATH=$DEPS_LIBDIR:${LD_LIBRARY_PATH:-}
    if nvcc_path=$(find_nvcc); then PATH=$PATH:$(dirname "$nvcc_path"); export PATH; fi
    "blk_${NAME//-/_}"
    rc=$?
    # 3 means skipped only when skip() said so.
    if [ "$rc" = 3 ] && [ ! -f "$WORK/skip-reason" ]; then rc=1; fi
    exit "$rc"
    ;;
  --gtest-verdict)
    # For tests/gpu/device_check_test.sh: gtest_verdict LOG RC.
    gtest_verdict "$2" "$3"
    ;;
  "")
    main
    ;;
  *)
    echo "usage: bash bench/gpu/device-check.sh [--list]  (environment: see the header)" >&2
    exit 2
    ;;
esac

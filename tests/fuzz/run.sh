#!/usr/bin/env bash
# Runs every fuzz target of a build-fuzz tree for a bounded time (`make fuzz-test`).
#   tests/fuzz/run.sh BUILD_DIR [TARGET...]     FUZZ_SECONDS per target (default 20)
# Each target starts from its committed seeds (tests/fuzz/corpus/<target>, never written to) and
# a scratch corpus in BUILD_DIR/fuzz/corpus/<target> that keeps what earlier runs found. A crash,
# leak, sanitizer report or timeout fails the run; the input is left in BUILD_DIR/fuzz/artifacts.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${1:?usage: tests/fuzz/run.sh BUILD_DIR [TARGET...]}
shift
SECONDS_PER_TARGET=${FUZZ_SECONDS:-20}
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  TARGETS=(safetensors_fuzz config_fuzz embeddings_request_fuzz tokenizer_json_fuzz
           wordpiece_fuzz bpe_fuzz unigram_fuzz int8_check_fuzz image_decode_fuzz
           torch_checkpoint_fuzz sentencepiece_fuzz)
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
mkdir -p "$BUILD_DIR/fuzz/artifacts"
# Targets run FUZZ_JOBS at a time (default: one per core); each is single-threaded.
JOBS_MAX=${FUZZ_JOBS:-$(nproc)}

run_one() {
  local t=$1 bin="$BUILD_DIR/fuzz/$1" scratch="$BUILD_DIR/fuzz/corpus/$1" dict=()
  mkdir -p "$scratch"
  case "$t" in
    tokenizer_json_fuzz|embeddings_request_fuzz|config_fuzz|safetensors_fuzz) dict=(-dict=tests/fuzz/json.dict) ;;
  esac
  "$bin" -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 -timeout=30 -print_final_stats=1 \
    -artifact_prefix="$BUILD_DIR/fuzz/artifacts/$t-" "${dict[@]}" \
    "$scratch" "tests/fuzz/corpus/$t" >"$BUILD_DIR/fuzz/$t.log" 2>&1
}

declare -A pid_of
for t in "${TARGETS[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS_MAX" ]; do wait -n || true; done
  echo "fuzz: $t for ${SECONDS_PER_TARGET}s"
  run_one "$t" &
  pid_of[$t]=$!
done
failed=()
for t in "${TARGETS[@]}"; do
  log="$BUILD_DIR/fuzz/$t.log"
  if wait "${pid_of[$t]}"; then
    echo "fuzz: $t: $(grep -E '^stat::number_of_executed_units|^stat::new_units_added' "$log" | tr '\n' ' ')"
  else
    echo "fuzz: $t FAILED (log: $log)"
    tail -40 "$log"
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz: failures in ${failed[*]}; reproduce with $BUILD_DIR/fuzz/<target> <artifact>"
  exit 1
fi

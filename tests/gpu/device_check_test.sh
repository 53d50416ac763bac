#!/usr/bin/env bash
# The control flow of bench/gpu/device-check.sh, without a GPU, PyTorch or the carried files
# (issue 24; run by ctest as DeviceCheckControlFlow):
#   1. a tiny budget: every block skips itself for time, in order; the report, results and logs
#      still land in $OUT (the 4 files the device tool brings back); the run ends within its
#      budget and is INCOMPLETE (exit 1);
#   2. a dry run on the fake clock: each block that fits "takes" its reservation, the others
#      skip, exactly as the budget arithmetic says; the time used stays within the budget;
#   3. a run killed with SIGTERM mid-block: the exit trap marks the block killed and still
#      writes the report and the logs;
#   4. the carried .deb files unpacked with ar + tar where there is no dpkg, with the packages'
#      CMake folders found under any multiarch directory; a corrupt .deb fails the block;
#   5. the gtest verdict: a device test skipped on the GPU machine fails (a driver older than
#      the runtime makes every device test skip), as does a crash or an empty filter;
#   6. the report renders the profile block's lines (orchid's per-op profile, PyTorch's rates at
#      the same shapes, the two side by side).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SCRIPT=$ROOT/bench/gpu/device-check.sh
TMP=$(mktemp -d "${TMPDIR:-/tmp}/device-check-test.XXXXXX")
FAILURES=0
trap '(( FAILURES > 0 )) || rm -rf "$TMP"' EXIT

fail() { echo "FAIL: $*"; FAILURES=$((FAILURES + 1)); }
ok() { echo "ok: $*"; }
ms() { date +%s%3N; }

# Only the four files, named as the device tool accepts.
check_out() {
  local out=$1 what=$2 got
  got=$(cd "$out" && ls -A | sort | tr '\n' ' ')
  if [ "$got" = "device-check.log device-check.md logs.tar.gz results.jsonl " ]; then
    ok "$what: \$OUT holds the report, results, log and logs archive"
  else
    fail "$what: \$OUT holds [$got]"
  fi
  tar -tzf "$out/logs.tar.gz" >/dev/null 2>&1 || fail "$what: logs.tar.gz is not a readable archive"
}

# The block lines of results.jsonl, as "name status note" (into a variable or a here-string,
# not a pipe into grep -q: with pipefail, an early close would fail the pipeline).
statuses() {
  python3 - "$1" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("impl") == "block":
        print(r["block"], r["status"], r.get("note", ""))
EOF
}

mapfile -t PLAN < <(bash "$SCRIPT" --list)
[ "${#PLAN[@]}" -ge 10 ] || fail "--list printed ${#PLAN[@]} blocks"

# ----------------------------------------------------------------------------- 1. tiny budget
D=$TMP/tiny
t0=$(ms)
# 20 s, all kept for the report: no block's reservation fits.
OUT=$D/out WORK_DIR=$D/work CARRY_DIR=$D/none BUDGET_S=20 RESERVE_S=20 \
  bash "$SCRIPT" >"$D.stdout" 2>&1
rc=$?
el=$(( $(ms) - t0 ))
[ "$rc" = 1 ] && ok "tiny budget: exit 1" || fail "tiny budget: exit $rc"
(( el <= 20000 )) && ok "tiny budget: ended in ${el} ms, within the 20 s budget" ||
  fail "tiny budget: took ${el} ms"
check_out "$D/out" "tiny budget"
want=$(printf '%s\n' "${PLAN[@]}" | awk '{print $1 " skipped"}')
got=$(statuses "$D/out/results.jsonl" | awk '$3 == "time" && $4 == "budget:" {print $1, $2}')
[ "$want" = "$got" ] && ok "tiny budget: all ${#PLAN[@]} blocks skipped for time, in order" ||
  fail "tiny budget: statuses differ: $(diff <(echo "$want") <(echo "$got") | head -5)"
for line in "${PLAN[@]}"; do
  name=${line%% *}
  grep -q "^| $name | skipped |" "$D/out/device-check.md" ||
    fail "tiny budget: $name not in the report"
done
grep -q "^DEVICE CHECK: INCOMPLETE" "$D/out/device-check.log" &&
  ok "tiny budget: verdict INCOMPLETE" ||
  fail "tiny budget: no INCOMPLETE verdict in the log"

# ----------------------------------------------------------------------------- 2. dry run
D=$TMP/dry
B=200 R=10
OUT=$D/out WORK_DIR=$D/work BUDGET_S=$B RESERVE_S=$R DRY_RUN=1 bash "$SCRIPT" >"$D.stdout" 2>&1
rc=$?
[ "$rc" = 1 ] && ok "dry run: exit 1 (nothing really ran)" || fail "dry run: exit $rc"
check_out "$D/out" "dry run"
t=0 want=
ran=0 skipped=0
for line in "${PLAN[@]}"; do
  read -r name need _ <<<"$line"
  if (( B - t - R < need )); then
    want+="$name skipped"$'\n'; skipped=$((skipped + 1))
  else
    want+="$name dry-run"$'\n'; t=$((t + need)); ran=$((ran + 1))
  fi
done
got=$(statuses "$D/out/results.jsonl" | awk '{print $1, $2}')
if [ "${want%$'\n'}" = "$got" ] && (( ran > 0 && skipped > 0 )); then
  ok "dry run: $ran blocks fit the ${B}s budget, $skipped skipped, as the arithmetic says"
else
  fail "dry run: statuses differ: $(diff <(echo "${want%$'\n'}") <(echo "$got") | head -5)"
fi
used=$(sed -n 's/^time used: \([0-9]*\)s.*/\1/p' "$D/out/device-check.log")
[ "$used" = "$t" ] && (( used <= B - R )) && ok "dry run: fake time used ${used}s <= $((B - R))s" ||
  fail "dry run: time used '$used', expected $t"

# ----------------------------------------------------------------------------- 3. killed
D=$TMP/killed
mkdir -p "$D"
OUT=$D/out WORK_DIR=$D/work BUDGET_S=1000 DRY_RUN=1 DRY_RUN_SLEEP=3 \
  bash "$SCRIPT" >"$D.stdout" 2>&1 &
pid=$!
# Kill it inside the second block: once its start is logged, it sleeps 3 s.
for _ in $(seq 100); do
  grep -q '^== \[[0-9]*s\] deps:' "$D.stdout" 2>/dev/null && break
  sleep 0.2
done
sleep 0.5
t0=$(ms)
kill -TERM "$pid"
wait "$pid"
rc=$?
el=$(( $(ms) - t0 ))
[ "$rc" = 1 ] && ok "killed: exit 1 from the trap" || fail "killed: exit $rc"
(( el <= 10000 )) && ok "killed: trap done in ${el} ms" || fail "killed: trap took ${el} ms"
check_out "$D/out" "killed"
killed=$(statuses "$D/out/results.jsonl" | grep -c " killed run killed (SIGTERM)")
[ "$killed" = 1 ] && grep -q "^machine dry-run" <<<"$(statuses "$D/out/results.jsonl")" &&
  ok "killed: the block done before recorded, the running one recorded as killed" ||
  fail "killed: $killed blocks recorded as killed"
grep -q "killed by SIGTERM" "$D/out/device-check.log" &&
  grep -q "^DEVICE CHECK: INCOMPLETE" "$D/out/device-check.log" &&
  grep -q "| killed |" "$D/out/device-check.md" &&
  ok "killed: log and report say so" || fail "killed: log or report incomplete"

# ----------------------------------------------------------------------------- 4. .deb files
D=$TMP/debs
mkdir -p "$D/carry/debs" "$D/pkg/usr/lib/some-arch/cmake"/{simdjson,fmt,GTest}
touch "$D/pkg/usr/lib/some-arch/cmake/simdjson/simdjson-config.cmake" \
  "$D/pkg/usr/lib/some-arch/cmake/fmt/fmt-config.cmake" \
  "$D/pkg/usr/lib/some-arch/cmake/GTest/GTestConfig.cmake" \
  "$D/pkg/usr/lib/some-arch/libsimdjson.so.14"
echo "2.0" >"$D/debian-binary"
tar -czf "$D/data.tar.gz" -C "$D/pkg" usr
tar -czf "$D/control.tar.gz" -C "$D" debian-binary
(cd "$D" && ar rc carry/debs/libfake_1.0_amd64.deb debian-binary control.tar.gz data.tar.gz) ||
  fail "debs: ar could not make the test package"
OUT=$D/out WORK_DIR=$D/work CARRY_DIR=$D/carry DPKG=no-such-dpkg BLOCKS=deps BUDGET_S=60 \
  bash "$SCRIPT" >"$D.stdout" 2>&1
if grep -q "^deps pass" <<<"$(statuses "$D/out/results.jsonl")" &&
    grep -q "no dpkg (DPKG=no-such-dpkg): unpacking with ar + tar" "$D/out/device-check.log" &&
    grep -q "DEP_GTest_DIR=$D/work/deps/usr/lib/some-arch/cmake/GTest" "$D/work/state.env"; then
  ok "debs: unpacked with ar + tar, CMake folders found under usr/lib/some-arch"
else
  fail "debs: $(grep -A8 '] deps' "$D/out/device-check.log")"
fi
head -c 2000 /dev/urandom >"$D/carry/debs/libbroken_1.0_amd64.deb"
OUT=$D/out2 WORK_DIR=$D/work2 CARRY_DIR=$D/carry DPKG=no-such-dpkg BLOCKS=deps BUDGET_S=60 \
  bash "$SCRIPT" >"$D.stdout2" 2>&1
rc=$?
grep -q "^deps fail" <<<"$(statuses "$D/out2/results.jsonl")" && [ "$rc" = 1 ] &&
  ok "debs: a corrupt .deb fails the block" || fail "debs: a corrupt .deb passed (exit $rc)"

# ----------------------------------------------------------------------------- 5. gtest verdict
D=$TMP/gtest
mkdir -p "$D"
verdict() { DEVICE=$1 bash "$SCRIPT" --gtest-verdict "$2" "$3" >/dev/null 2>&1; echo $?; }
cat >"$D/pass.log" <<'EOF'
[ RUN      ] CudaOpsTest.SwiGlu
[       OK ] CudaOpsTest.SwiGlu (3 ms)
[ RUN      ] CudaEngineNoDeviceTest.MakeFailsCleanlyWithoutADevice
[  SKIPPED ] CudaEngineNoDeviceTest.MakeFailsCleanlyWithoutADevice (0 ms)
[==========] 2 tests from 2 test suites ran. (3 ms total)
[  PASSED  ] 1 test.
[  SKIPPED ] 1 test, listed below:
[  SKIPPED ] CudaEngineNoDeviceTest.MakeFailsCleanlyWithoutADevice
EOF
cat >"$D/skip.log" <<'EOF'
[ RUN      ] CudaOpsTest.SwiGlu
tests/engine/cuda/cuda_ops_test.cpp:410: Skipped
no CUDA device: cudaGetDeviceCount: CUDA driver version is insufficient for CUDA runtime version
[  SKIPPED ] CudaOpsTest.SwiGlu (0 ms)
[==========] 1 test from 1 test suite ran. (0 ms total)
[  PASSED  ] 0 tests.
[  SKIPPED ] 1 test, listed below:
[  SKIPPED ] CudaOpsTest.SwiGlu
EOF
printf '[ RUN      ] CudaOpsTest.SwiGlu\n' >"$D/crash.log"
printf '[==========] 0 tests from 0 test suites ran. (0 ms total)\n[  PASSED  ] 0 tests.\n' \
  >"$D/none.log"
got="$(verdict cuda "$D/pass.log" 0) $(verdict cuda "$D/skip.log" 0)"
got+=" $(verdict cpu "$D/skip.log" 0) $(verdict cuda "$D/pass.log" 1)"
got+=" $(verdict cuda "$D/crash.log" 139) $(verdict cuda "$D/none.log" 0)"
[ "$got" = "0 1 0 1 1 1" ] &&
  ok "gtest verdict: pass, device skip fails on cuda only, failure, crash, empty filter" ||
  fail "gtest verdict: got [$got], want [0 1 0 1 1 1]"

# ----------------------------------------------------------------------------- 6. profile report
D=$TMP/profile
mkdir -p "$D"
cat >"$D/results.jsonl" <<'EOF2'
{"impl": "peak", "gemm_tflops": 791.0}
{"impl": "bert-base/orchid-graphs-off", "suite": "profile", "of": "throughput", "len": 512, "batch": 100, "iters": 3, "passes": 4.00, "label": "Linear n=3072 k=768 gelu: gemm", "calls": 48.00, "ms": 7.1, "share": 0.25, "tflops": 340.1}
{"impl": "bert-base/orchid-graphs-off", "suite": "profile", "of": "throughput", "len": 512, "batch": 100, "iters": 3, "passes": 4.00, "label": "Attention h=12 kv=12 d=64", "calls": 48.00, "ms": 5.0, "share": 0.2, "tflops": 190.0}
{"impl": "bert-base/orchid-graphs-off", "suite": "profile", "of": "throughput", "len": 512, "batch": 100, "iters": 3, "passes": 4.00, "label": "Linear n=3072 k=768 gelu: gelu", "calls": 48.00, "ms": 3.0, "share": 0.1, "tflops": null}
{"impl": "bert-base/orchid-graphs-off", "suite": "profile", "of": "throughput", "len": 512, "batch": 100, "iters": 3, "passes": 4.00, "label": "(all ops)", "ms": 28.0, "share": 1, "tflops": null, "wall_ms": 29.5, "gemm_ms": 16.0, "gemm_tflops": 420.0, "attn_ms": 5.0, "attn_tflops": 190.0}
{"impl": "torch", "suite": "profile-ref", "of": "attn", "model": "bert-base", "label": "SDPA h=12 kv=12 d=64 (flash)", "ms": 0.2, "tflops": 400.0, "backend": "flash", "len": 512, "batch": 100, "kv": "mha"}
{"impl": "torch", "suite": "profile-ref", "of": "attn", "model": "bert-base", "label": "SDPA h=12 kv=12 d=64 (cudnn)", "unavailable": "No available kernel"}
{"impl": "torch", "suite": "profile-ref", "of": "matmul", "model": "bert-base", "label": "linear+bias m=16384 n=3072 k=768", "ms": 0.2, "tflops": 600.0, "m": 16384, "n": 3072, "k": 768}
EOF2
if python3 "$ROOT/bench/gpu/gpu_check.py" report --jsonl "$D/results.jsonl" --out "$D/r.md" \
    --quiet; then
  md=$(cat "$D/r.md")
  want=("## Per-op profile" "| Linear n=3072 k=768 gelu: gelu | 48 | 3.000 | 0.250 | 10.0% | - |"
        "GEMMs 16.000 ms at 420 TFLOP/s (53% of the 791 peak)"
        "| bert-base/orchid-graphs-off | 512 x 100 | 0.417 | 190 | 0.200 (flash) | 400 | 2.11 |"
        "| bert-base | 512 x 100 | Linear n=3072 k=768 gelu | 7.100 | 340 | - | 600 | - | - |"
        "n/a: No available kernel")
  missing=0
  for w in "${want[@]}"; do
    [[ $md == *"$w"* ]] || { fail "profile report: no [$w]"; missing=1; }
  done
  (( missing )) || ok "profile report: per-op table, PyTorch rates, attention and GEMMs side by side"
else
  fail "profile report: gpu_check.py report failed"
fi

if (( FAILURES > 0 )); then
  echo "$FAILURES check(s) failed; the runs' outputs are in $TMP"
  exit 1
fi
echo "all device-check control-flow checks passed"

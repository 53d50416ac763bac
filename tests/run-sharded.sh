#!/usr/bin/env bash
# Runs a GoogleTest binary as N shards at once (GTEST_TOTAL_SHARDS), each shard's output in its
# own log; prints every log and fails when any shard failed. `make asan-test` uses it so that the
# sanitizer run uses every core.
#   tests/run-sharded.sh N BINARY [GTEST ARGS...]
set -uo pipefail
N=${1:?usage: tests/run-sharded.sh N BINARY [ARGS...]}
BIN=${2:?usage: tests/run-sharded.sh N BINARY [ARGS...]}
shift 2
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
pids=()
for ((i = 0; i < N; i++)); do
  GTEST_TOTAL_SHARDS=$N GTEST_SHARD_INDEX=$i "$BIN" "$@" >"$logs/$i.log" 2>&1 &
  pids+=($!)
done
failed=0
for ((i = 0; i < N; i++)); do
  if ! wait "${pids[$i]}"; then failed=1; fi
  echo "--- shard $((i + 1)) of $N"
  cat "$logs/$i.log"
done
exit $failed

#!/usr/bin/env bash
# Installs the system dependencies orchid needs from Debian packages. Idempotent.
#   install-deps.sh          what `make serve` needs to build and run the orchid binary
#   install-deps.sh --dev    also what the unit tests, benchmarks and fuzzers build with
#                            (GoogleTest, Google Benchmark, clang for libFuzzer)
#   install-deps.sh --test   also what only the end-to-end tests run (a headless browser for
#                            tests/e2e/test_pages.py, promtool for the Grafana dashboard test)
# so that `make serve` on a fresh machine fetches none of the test tooling.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build ccache pkg-config git
  libboost1.81-dev libsimdjson-dev libopenblas-dev libdnnl-dev
  libspdlog-dev libfmt-dev libcli11-dev libutf8proc-dev libpcre2-dev
  libjpeg62-turbo-dev libpng-dev libwebp-dev libgif-dev libssl-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  python3 python3-venv python3-pip
)
DEV=(libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev)
case "${1:-}" in
  "") ;;
  --dev) PKGS+=("${DEV[@]}") ;;
  --test) PKGS+=("${DEV[@]}" prometheus chromium chromium-driver) ;;
  *) echo "usage: install-deps.sh [--dev|--test]" >&2; exit 2 ;;
esac
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"

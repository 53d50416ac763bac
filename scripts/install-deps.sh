#!/usr/bin/env bash
# Installs every system dependency orchid needs from Debian packages. Idempotent.
# With --test, also what only the tests need (a headless browser for tests/e2e/test_pages.py),
# so that `make serve` on a fresh machine does not fetch a browser.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build ccache pkg-config git
  libboost1.81-dev libsimdjson-dev libopenblas-dev
  libspdlog-dev libfmt-dev libcli11-dev libutf8proc-dev libpcre2-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc prometheus
  clang libclang-rt-14-dev
  python3 python3-venv python3-pip
)
if [ "${1:-}" = "--test" ]; then
  PKGS+=(chromium chromium-driver)
fi
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

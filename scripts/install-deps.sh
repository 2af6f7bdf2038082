#!/usr/bin/env bash
# scripts/install-deps.sh — install what the build and the tests need, only what
# is missing: Debian packages (pinned by name, from Debian's archive) and the
# Python packages in tests/requirements.txt (pinned versions, from PyPI).
# Called by `make`; safe to run again (it does nothing when all is present).
set -euo pipefail
cd "$(dirname "$0")/.."

# Build: compiler, cmake, and the libraries we link statically.
# Fuzzing: clang with libFuzzer (libclang-rt-14-dev).
DEB_PKGS=(build-essential cmake pkg-config clang libclang-rt-14-dev
          libjansson-dev libpcre2-dev libutf8proc-dev libevent-dev nettle-dev
          python3 python3-pip ca-certificates unzip)

missing=()
for p in "${DEB_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

# Python packages: pip is quick when everything is already satisfied. We use
# the python3 on PATH (a pyenv or the system one); on a Debian-managed python
# pip needs --break-system-packages, which we add only there.
PIP_FLAGS=(-q --disable-pip-version-check)
if python3 -c 'import sys,sysconfig,os; sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_path("stdlib"),"EXTERNALLY-MANAGED")) else 1)'; then
  PIP_FLAGS+=(--break-system-packages)
fi
if ! python3 - <<'PY' 2>/dev/null
import importlib.metadata as m, sys
for line in open("tests/requirements.txt"):
    line = line.split("#")[0].strip()
    if not line: continue
    name, ver = line.split("==")
    if m.version(name) != ver: sys.exit(1)
PY
then
  echo "install-deps: installing Python packages from tests/requirements.txt"
  python3 -m pip install "${PIP_FLAGS[@]}" -r tests/requirements.txt
fi

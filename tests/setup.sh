#!/usr/bin/env bash
# Prepare this machine for bundler's tests, the Wine ones included.
#
#   bash tests/setup.sh        (as root, or with sudo, on Debian 12)
#
# Idempotent: apt runs only when a package is missing, and the Windows
# CPython, its wheels, the Wine prefix and the stand-in DLLs are cached under
# $BUNDLER_TEST_CACHE (default ~/.cache/bundler-tests), so a second run takes
# seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

# wine brings /usr/bin/wine; wine64 the 64-bit loader; mingw-w64 builds the
# stand-in DLLs (i686 for the wrong-architecture test); 7z writes Deflate64;
# openssl and osslsigncode make test certificates and sign, strip and re-sign DLLs
# (tests/integration/test_signatures.py); Info-ZIP's unzip and zip list and read the
# zips --zip writes and are the benches' baselines (bench/pack_wheels.py, bench/zip_cold.py).
APT_PACKAGES=(
    wine wine64
    gcc-mingw-w64-x86-64 binutils-mingw-w64-x86-64
    gcc-mingw-w64-i686 binutils-mingw-w64-i686
    p7zip-full
    openssl osslsigncode
    unzip zip
)

sudo=()
if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$pkg")
    fi
done

if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    "${sudo[@]}" apt-get update -q
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
else
    echo "setup: Debian packages present"
fi

PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -m pip --version >/dev/null 2>&1; then
    # Debian's own python3 comes without pip.
    "${sudo[@]}" apt-get update -q
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-pip
fi
pip_args=(--quiet --disable-pip-version-check)
# Debian's python3 refuses pip installs (PEP 668) unless told; a test machine
# installs into it on purpose so that plain `python3 -m pytest` works.
if "$PYTHON" -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(
        os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))'; then
    pip_args+=(--break-system-packages)
fi
"$PYTHON" -m pip install "${pip_args[@]}" -e '.[test]'
"$PYTHON" -m tests.harness.winenv.prepare

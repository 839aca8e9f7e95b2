#!/usr/bin/env bash
# Build the benchmark corpus: the Python files of pinned wheels of transformers, timm and
# lightning, downloaded with pip (no dependencies) into benchmarks/corpus/ (git-ignored).
#
# Usage: bash benchmarks/corpus.sh [PYTHON]   (PYTHON defaults to python3; it needs pip)
# Prints the number of files, lines and bytes per package and in total. Re-running reuses the
# downloaded wheels and unpacks afresh.
set -euo pipefail

PYTHON="${1:-python3}"
HERE="$(cd "$(dirname "$0")" && pwd)"
CORPUS="$HERE/corpus"
WHEELS="$CORPUS/wheels"
SOURCE="$CORPUS/src"

# Pinned: the corpus must be the same from one run (and one machine) to the next.
PINS=(
    "transformers==5.23.0"
    "timm==1.0.31"
    "lightning==2.6.6"
)

mkdir -p "$WHEELS"
for pin in "${PINS[@]}"; do
    name="${pin%%==*}"
    version="${pin##*==}"
    if ! compgen -G "$WHEELS/${name}-${version}-*.whl" >/dev/null; then
        "$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: --dest "$WHEELS" "$pin"
    fi
done

rm -rf "$SOURCE"
mkdir -p "$SOURCE"
"$PYTHON" - "$WHEELS" "$SOURCE" "${PINS[@]}" <<'PY'
"""Unpack the .py files of each pinned wheel into SOURCE/<name>/ and count them."""
import sys
import zipfile
from pathlib import Path

wheels, source, pins = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
totals = [0, 0, 0]
print(f"{'package':<24} {'files':>7} {'lines':>10} {'bytes':>12}")
for pin in pins:
    name, version = pin.split("==")
    (wheel,) = wheels.glob(f"{name}-{version}-*.whl")
    files = lines = size = 0
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.infolist():
            if not member.filename.endswith(".py") or ".dist-info/" in member.filename:
                continue
            data = archive.read(member)
            target = source / name / member.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            files += 1
            lines += data.count(b"\n")
            size += len(data)
    totals = [totals[0] + files, totals[1] + lines, totals[2] + size]
    print(f"{pin:<24} {files:>7} {lines:>10} {size:>12}")
print(f"{'total':<24} {totals[0]:>7} {totals[1]:>10} {totals[2]:>12}")
print(f"corpus: {source}")
PY

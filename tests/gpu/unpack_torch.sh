#!/usr/bin/env bash
# On the GPU machine: checks and unpacks the torch parts pack_torch.sh wrote into a site folder.
#   bash unpack_torch.sh <folder holding tNN and SHA256SUMS> <site dir (/tmp/site)>
set -euo pipefail
PARTS="$1"
SITE="${2:-/tmp/site}"
TOOLS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
(cd "$PARTS" && sha256sum -c --quiet SHA256SUMS)
mkdir -p "$SITE"
cat "$PARTS"/t?? | LD_LIBRARY_PATH="$TOOLS" "$TOOLS/zstd" -q -d --long=31 -c | tar -x -C "$SITE"
echo "torch $(sed -n 's/^Version: //p' "$SITE"/torch-*.dist-info/METADATA) unpacked into $SITE"

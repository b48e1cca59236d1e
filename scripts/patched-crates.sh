#!/usr/bin/env bash
# Lays out the patched crates the workspace builds through `[patch.crates-io]` (Cargo.toml): for
# each patches/NAME.diff, the published crate it names with the diff applied, at patches/NAME/
# (git-ignored; patches/README.md says what each diff changes and why).
#
#   scripts/patched-crates.sh              lays out each crate whose stamp is missing or stale
#   scripts/patched-crates.sh --check      derives each crate again in a temporary directory and
#                                          compares it with patches/NAME/: exits 1 if a diff no
#                                          longer applies or a laid-out crate differs
#   scripts/patched-crates.sh --diff NAME  prints patches/NAME.diff as the laid-out crate now
#                                          stands: its header, then `diff -ruN` published ->
#                                          patches/NAME/ (an edit there becomes the new diff)
#
# Each diff opens with a header that `patch` skips, naming the crate it applies to:
#   crate: NAME VERSION
#   sha256: the SHA-256 of NAME-VERSION.crate as published on crates.io
# The workspace Cargo.lock cannot give the checksum: it lists a patched crate as a path package,
# without one. The .crate file is the one cargo keeps in its registry cache
# ($CARGO_HOME/registry/cache); when it is not there, `cargo fetch` puts it there, run on a
# throwaway manifest outside the workspace (the workspace's own manifest does not load before
# patches/NAME/ exist) that depends on NAME =VERSION only, beside a copy of the workspace
# Cargo.lock, so that its dependencies resolve to the versions the workspace builds and nothing
# else is downloaded. The file's SHA-256 must equal the header's before it is extracted.
#
# Laying out: extract, `patch -p1` with no fuzz, write the stamp patches/NAME/.patched (the
# SHA-256 of the diff and of the .crate), then rename the result into place, so patches/NAME/
# never holds a half-laid crate. A crate whose stamp matches is left alone, files and times:
# a new time stamp would make cargo rebuild CubeCL. Idempotent, and quick once done (it then
# reads the diffs and the stamps, and runs nothing else).
set -euo pipefail

# What the stamp records; a change to how crates are laid out bumps it, which lays them out again.
LAYOUT=1
STAMP=".patched"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
patches="$root/patches"
# rustup picks the toolchain of rust-toolchain.toml for the cargo and rustc run below.
cd "$root"

mode=lay
only=""
case "${1:-}" in
  "") ;;
  --check) mode=check ;;
  --diff)
    mode=diff
    only="${2:?usage: $0 --diff NAME}"
    [ -f "$patches/$only.diff" ] || { echo "patched-crates: no patches/$only.diff" >&2; exit 2; }
    ;;
  *) echo "usage: $0 [--check | --diff NAME]" >&2; exit 2 ;;
esac

temps=()
cleanup() { [ "${#temps[@]}" = 0 ] || rm -rf "${temps[@]}"; }
trap cleanup EXIT

sha256() { sha256sum "$1" | cut -d' ' -f1; }

# The value of FIELD in the header of a diff (the lines before its first `--- `).
header_field() {
  awk -v field="$2:" '/^--- / { exit } $1 == field { $1 = ""; sub(/^ /, ""); print; exit }' "$1"
}

# The diffs, and what each names: NAMES, VERSIONS, SHAS by index.
names=() versions=() shas=()
for diff in "$patches"/*.diff; do
  [ -f "$diff" ] || continue
  name="$(basename "$diff" .diff)"
  read -r crate version <<<"$(header_field "$diff" crate)"
  sha="$(header_field "$diff" sha256)"
  if [ "$crate" != "$name" ] || [ -z "$version" ] || ! [[ "$sha" =~ ^[0-9a-f]{64}$ ]]; then
    echo "patched-crates: patches/$name.diff must open with 'crate: $name VERSION' and 'sha256: HASH'" >&2
    exit 2
  fi
  names+=("$name") versions+=("$version") shas+=("$sha")
done

stamp_of() { # index
  printf 'layout %s\ncrate %s %s %s\ndiff %s\n' "$LAYOUT" "${names[$1]}" "${versions[$1]}" \
    "${shas[$1]}" "$(sha256 "$patches/${names[$1]}.diff")"
}

current() { # index: is patches/NAME/ laid out from this diff and crate?
  local stamp="$patches/${names[$1]}/$STAMP"
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$(stamp_of "$1")" ]
}

# The cached .crate of index $1 with the expected SHA-256, if there is one.
cached_crate() {
  local file
  for file in "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/"${names[$1]}-${versions[$1]}.crate"; do
    if [ -f "$file" ] && [ "$(sha256 "$file")" = "${shas[$1]}" ]; then
      echo "$file"
      return
    fi
  done
}

# Fetches the .crate of each index given into cargo's registry cache (see the top of this file).
fetch() {
  local dir host i
  dir="$(mktemp -d)"
  temps+=("$dir")
  mkdir "$dir/src"
  : >"$dir/src/lib.rs"
  [ ! -f "$root/Cargo.lock" ] || cp "$root/Cargo.lock" "$dir/Cargo.lock"
  {
    # `[workspace]`: a manifest of its own, whatever directory holds it.
    printf '[package]\nname = "patched-crates-fetch"\nversion = "0.0.0"\nedition = "2024"\n'
    printf 'publish = false\n\n[workspace]\n\n[dependencies]\n'
    for i in "$@"; do
      printf '%s = { version = "=%s", default-features = false }\n' "${names[$i]}" "${versions[$i]}"
    done
  } >"$dir/Cargo.toml"
  # Only the host's dependencies, as a build would download them.
  host="$(rustc -vV | sed -n 's/^host: //p')"
  for i in "$@"; do echo "patched-crates: fetching ${names[$i]} ${versions[$i]} from crates.io"; done
  cargo fetch --quiet --manifest-path "$dir/Cargo.toml" --target "$host"
}

# Extracts the published crate of index $1 into the directory $2 (as $2/NAME-VERSION), its
# SHA-256 checked; with $3 = patched, applies the diff and writes the stamp.
derive() {
  local i="$1" into="$2" file crate="${names[$1]}-${versions[$1]}"
  file="$(cached_crate "$i")"
  if [ -z "$file" ]; then
    echo "patched-crates: $crate.crate does not have the SHA-256 patches/${names[$i]}.diff names" \
      "(${shas[$i]}); cargo's registry cache has:" >&2
    sha256sum "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/"$crate.crate" >&2 || true
    return 1
  fi
  tar -xzf "$file" -C "$into" --no-same-owner
  [ "${3:-}" = patched ] || return 0
  if ! patch -d "$into/$crate" -p1 --batch --forward --fuzz=0 --no-backup-if-mismatch \
    --reject-file=- --quiet <"$patches/${names[$i]}.diff"; then
    echo "patched-crates: patches/${names[$i]}.diff does not apply to $crate" >&2
    return 1
  fi
  stamp_of "$i" >"$into/$crate/$STAMP"
}

if ! command -v patch >/dev/null; then
  echo "patched-crates: needs GNU patch (apt-get install patch)" >&2
  exit 2
fi

# The indices to work on: every diff, or the one --diff names; in lay mode, only the stale ones.
todo=()
for i in "${!names[@]}"; do
  [ -z "$only" ] || [ "${names[$i]}" = "$only" ] || continue
  [ "$mode" != lay ] || ! current "$i" || continue
  todo+=("$i")
done
[ "${#todo[@]}" != 0 ] || exit 0

if [ "$mode" = lay ]; then
  # One layout at a time; a wait ends with the work done by the other, checked again below.
  exec 9>"$patches/.lock"
  flock 9
fi

missing=()
for i in "${todo[@]}"; do
  [ -n "$(cached_crate "$i")" ] || missing+=("$i")
done
[ "${#missing[@]}" = 0 ] || fetch "${missing[@]}"

case "$mode" in
  lay)
    for i in "${todo[@]}"; do
      ! current "$i" || continue
      name="${names[$i]}"
      # Staged beside its destination (one file system, so the renames below are renames).
      work="$(mktemp -d "$patches/.$name.XXXXXX")"
      temps+=("$work")
      derive "$i" "$work" patched
      if [ -e "$patches/$name" ]; then mv "$patches/$name" "$work/old"; fi
      mv "$work/$name-${versions[$i]}" "$patches/$name"
      echo "patched-crates: laid out patches/$name ($name ${versions[$i]} + patches/$name.diff)"
    done
    ;;
  check)
    work="$(mktemp -d)"
    temps+=("$work")
    failed=0
    for i in "${todo[@]}"; do
      name="${names[$i]}"
      if ! derive "$i" "$work" patched; then
        failed=1
      elif [ ! -d "$patches/$name" ]; then
        echo "patched-crates: patches/$name is not laid out (bash scripts/setup.sh)" >&2
        failed=1
      elif ! (cd "$work" && diff -r -x "$STAMP" "$name-${versions[$i]}" "$patches/$name") >&2; then
        echo "patched-crates: patches/$name differs from $name ${versions[$i]} + patches/$name.diff" >&2
        failed=1
      else
        echo "patched-crates: patches/$name is $name ${versions[$i]} + patches/$name.diff"
      fi
    done
    exit "$failed"
    ;;
  diff)
    i="${todo[0]}"
    work="$(mktemp -d)"
    temps+=("$work")
    derive "$i" "$work"
    mv "$work/${names[$i]}-${versions[$i]}" "$work/a"
    ln -s "$patches/${names[$i]}" "$work/b"
    awk '/^--- / { exit } { print }' "$patches/${names[$i]}.diff"
    # diff exits 1 when the trees differ, 2 on trouble.
    rc=0
    (cd "$work" && diff -ruN -x "$STAMP" a b) >"$work/out" || rc=$?
    [ "$rc" -le 1 ] || exit 2
    # patch needs only the ---/+++ lines: the `diff` command lines and the times go.
    sed -E -e '/^diff /d' -e 's/^((---|\+\+\+) [^\t]*)\t.*$/\1/' "$work/out"
    ;;
esac

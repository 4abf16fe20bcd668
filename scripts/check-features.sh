#!/bin/sh
# Each harness feature of asp-convert builds alone, and so does each crate by itself.
#
# `cargo test --workspace` builds every crate with the union of the features its members ask
# for, so a module gated on one harness's feature but used by another, or by the shared
# `Harness` trait, compiles there and breaks `cargo build -p asp-repo` (which asks for
# Claude Code alone) or any build of asp-convert with fewer harnesses. Warnings fail it too
# (an import or a function only some harnesses use). `cargo check` only: no code generation.
set -eu
cd "$(dirname "$0")/.."
export RUSTFLAGS="${RUSTFLAGS:-} -D warnings"
for features in "" claude-code codex gemini opencode pi qwen copilot; do
    echo "asp-convert, features: ${features:-none}"
    cargo check --locked --quiet -p asp-convert --no-default-features ${features:+--features "$features"}
done
for crate in asp-format asp-protocol asp-registry asp-repo asp-hub; do
    echo "$crate alone"
    cargo check --locked --quiet -p "$crate"
done

#!/usr/bin/env bash
# Runs the whole test suite of kube-ovn-rs on a Debian machine, as root: installs the real
# parts the tests drive when missing (scripts/install-deps.sh), checks formatting and
# lints, builds the sans-I/O ovsdb core, checks that every library crate packages, fuzzes
# each fuzz target for a bounded time (FUZZ_SECONDS each, 45 by default), then runs every
# test. Under CI a test that needs a real part fails instead of skipping; CI counts as set
# for any value but "", "0" or "false" (ovn_harness::in_ci), and this script sets CI=true
# unless one is inherited.
set -Eeuo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh

export CI=${CI:-true}
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
# The OVSDB core without the tokio client (the `client` feature).
cargo check -p kube-ovn-ovsdb --no-default-features
# Every library crate packages: metadata, files, versioned in-workspace dependencies, in
# dependency order (the unpublished kube-ovn, benches and examples are left out).
# --no-verify: no second build of the workspace; --allow-dirty: this checks packaging,
# not whether the tree is committed.
cargo package --workspace --exclude kube-ovn --exclude kube-ovn-benches \
    --exclude kube-ovn-examples --no-verify --allow-dirty
# Bounded fuzzing of every cargo-fuzz target, on stable: libFuzzer's flags need
# RUSTC_BOOTSTRAP, and `-s none` builds without a sanitizer. New corpus entries land in
# <crate>/fuzz/corpus/<target> (not committed); the committed seeds are read too.
fuzz_seconds=${FUZZ_SECONDS:-45}
for crate_target in ovsdb:deframer cni-spec:parse; do
    crate=${crate_target%%:*} target=${crate_target#*:}
    mkdir -p "$crate/fuzz/corpus/$target"
    (cd "$crate" && RUSTC_BOOTSTRAP=1 cargo fuzz run "$target" -s none \
        "fuzz/corpus/$target" "tests/fuzz_replay/seeds/$target" \
        -- -max_total_time="$fuzz_seconds")
done

# Last, so the test runner's summary closes the output.
cargo test --workspace "$@"

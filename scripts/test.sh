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
# cargo-fuzz drives the bounded fuzz runs below (on stable, through RUSTC_BOOTSTRAP=1 and
# `-s none`); only the tests need it, so the sandbox's install step leaves it out.
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing: cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

export CI=${CI:-true}
# One build from scratch: incremental caches would only cost disk and time.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
# The OVSDB core without the tokio client (the `client` feature).
cargo check -p kube-ovn-ovsdb --no-default-features
# The layout's arrows: no production crate depends on the sandbox, the harness or the
# test support; the CNI shim has no Kubernetes client, async runtime or TLS; the API
# crate no async runtime.
bash scripts/check-layout.sh
# Every crate meant to be published packages: metadata, files, versioned in-workspace
# dependencies, in dependency order (the unpublished sandbox, test support, benches and
# examples are left out).
# --no-verify: no second build of the workspace; --allow-dirty: this checks packaging,
# not whether the tree is committed.
cargo package --workspace --exclude kube-ovn-sandbox --exclude kube-ovn-test-support \
    --exclude kube-ovn-benches --exclude kube-ovn-examples --no-verify --allow-dirty
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

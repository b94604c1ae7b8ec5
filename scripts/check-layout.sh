#!/usr/bin/env bash
# The workspace's layout, checked on its normal (non-dev) dependency edges:
# binaries -> parts -> kube-ovn-api -> the foundation crates, and nothing of production
# depends on the sandbox, the OVN test harness or the test support. Also what the two
# light crates promise: the CNI shim runs without a Kubernetes client, an async runtime,
# TLS or the datapath crate; the API crate without an async runtime.
set -Eeuo pipefail
cd "$(dirname "$0")/.."

fail=0
# deps CRATE: its normal dependencies, one package name a line, itself included.
deps() { cargo tree -q -p "$1" --all-features -e normal --prefix none --format '{p}' | awk '{print $1}' | sort -u; }
refuse() { # CRATE WHY PACKAGE...
    local crate=$1 why=$2; shift 2
    local have; have=$(deps "$crate")
    for bad in "$@"; do
        if grep -qx -- "$bad" <<<"$have"; then
            echo "check-layout: $crate depends on $bad ($why):" >&2
            cargo tree -q -p "$crate" --all-features -e normal -i "$bad" >&2 || true
            fail=1
        fi
    done
}

production=(kube-ovn-api kube-ovn-cni kube-ovn-cmd kube-ovn-controller kube-ovn-daemon kubectl-ko kube-ovn)
for crate in "${production[@]}"; do
    refuse "$crate" "production code must not depend on test or sandbox crates" \
        embedded-apiserver ovn-harness kube-ovn-test-support kube-ovn-sandbox
done
refuse kube-ovn-cni "the CNI shim stays light" kube kube-client tokio rustls jsonrpsee kube-ovn-datapath
refuse kube-ovn-api "the API crate has no async runtime or client" tokio kube-client
# the parts do not import each other, except the daemon the CNI's wire types
refuse kube-ovn-daemon "parts stay apart" kube-ovn-controller kubectl-ko
refuse kube-ovn-controller "parts stay apart" kube-ovn-daemon kube-ovn-cni kubectl-ko
refuse kubectl-ko "parts stay apart" kube-ovn-controller kube-ovn-daemon kube-ovn-cni

if ((fail)); then exit 1; fi
echo "check-layout: ok ($(deps kube-ovn-cni | wc -l) packages in the CNI shim, $(deps kube-ovn-api | wc -l) in the API crate)"

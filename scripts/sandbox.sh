#!/usr/bin/env bash
# The sandbox in one command, from a fresh Debian machine (root, Rust toolchain):
# installs the packages it drives (OVS, OVN, CNI plugins, kubectl), builds the
# binaries, brings up a 2-node Kube-OVN cluster with the tour in examples/sandbox,
# shows it working (status, a short NetworkPolicy matrix on real traffic) and says
# how to go on.
#   NODES=2                                  how many nodes
#   STATE_DIR=/var/lib/kube-ovn-sandbox      where its pids, kubeconfig and logs go
#   PROFILE=release|debug                    how to build (release: slower build, faster sandbox)
set -Eeuo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
NODES=${NODES:-2}
STATE_DIR=${STATE_DIR:-/var/lib/kube-ovn-sandbox}
PROFILE=${PROFILE:-debug}

[[ $(id -u) == 0 ]] || { echo "sandbox.sh: run as root (it creates network namespaces and runs OVS)" >&2; exit 1; }
command -v cargo >/dev/null || { echo "sandbox.sh: cargo not found: install a Rust toolchain (https://rustup.rs)" >&2; exit 1; }

echo "== installing dependencies"
bash scripts/install-deps.sh

echo "== building kube-ovn-sandbox, kube-ovn-controller, kube-ovn-daemon, kube-ovn (CNI), kubectl-ko"
flags=(); [[ $PROFILE == release ]] && flags=(--release)
cargo build -q "${flags[@]}" -p kube-ovn-sandbox -p kube-ovn-controller -p kube-ovn-daemon \
    -p kube-ovn-cni -p kubectl-ko --bins
BIN=$PWD/target/$PROFILE
export PATH=$BIN:$PATH   # kube-ovn-sandbox, and kubectl-ko for `kubectl ko`

echo "== kube-ovn-sandbox up --nodes $NODES"
kube-ovn-sandbox --state-dir "$STATE_DIR" up --nodes "$NODES"

echo "== kube-ovn-sandbox status"
kube-ovn-sandbox --state-dir "$STATE_DIR" status

echo "== kube-ovn-sandbox matrix --ports 80 --protocols tcp  (expected from the policies vs observed on real traffic)"
kube-ovn-sandbox --state-dir "$STATE_DIR" matrix --ports 80 --protocols tcp

cat <<MSG

== the sandbox runs in the background. To go on:
  export PATH=$BIN:\$PATH KUBECONFIG=$STATE_DIR/kubeconfig KUBE_OVN_SANDBOX=$STATE_DIR
  kubectl get pods -A -o wide
  kubectl get subnets,ippools
  kubectl -n tour exec web-static -- ping -c 3 10.66.0.100     # across nodes and subnets
  kubectl -n tour logs web-static
  kubectl ko nbctl show
  kubectl ko trace tour/web-static 10.67.0.2 tcp 80
  kubectl ko diagnose all
  kube-ovn-sandbox status
  kube-ovn-sandbox matrix                                       # 80,81 x tcp,udp
  kube-ovn-sandbox down                                         # stops it all, removes what it made
MSG

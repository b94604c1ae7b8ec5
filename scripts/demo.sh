#!/usr/bin/env bash
# The main job, for now: bring up a real OVN (NB + SB ovsdb-server and ovn-northd) through
# the project's own harness, write a small logical network through the project's OVSDB
# client and print what ovn-northd compiled from it. Everything runs under a temporary
# directory and is stopped when the demo exits.
set -Eeuo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
exec cargo run -q -p kube-ovn-examples --bin ovn-demo -- "$@"

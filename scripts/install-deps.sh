#!/usr/bin/env bash
# Installs what the tests and the demo drive for real (OVS, OVN, the reference CNI plugins,
# iproute2, ping, ethtool, iptables for natOutgoing, sysctl; python3 for the generator that
# embedded-apiserver's pb_generated_current test re-runs) when it is missing, then stops
# whatever daemons the packages started by themselves: the tests and the demo start and own
# every process they talk to.
set -Eeuo pipefail

need=()
for pair in ovsdb-server:openvswitch-switch ovn-northd:ovn-central ovn-controller:ovn-host \
            /usr/lib/cni/bridge:containernetworking-plugins ip:iproute2 ping:iputils-ping \
            ethtool:ethtool kubectl:kubernetes-client iptables-restore:iptables sysctl:procps \
            python3:python3; do
    bin=${pair%%:*} pkg=${pair#*:}
    if [[ $bin == /* ]]; then [[ -x $bin ]] || need+=("$pkg")
    else command -v "$bin" >/dev/null 2>&1 || need+=("$pkg"); fi
done
if ((${#need[@]})); then
    echo "installing: ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${need[@]}"
fi

# Packages may start their own daemons (init scripts); stop them by their pid files so the
# tests own every ovsdb-server / northd / vswitchd / controller they talk to.
for pidfile in /var/run/openvswitch/*.pid /var/run/ovn/*.pid /run/openvswitch/*.pid /run/ovn/*.pid; do
    [[ -s $pidfile ]] || continue
    pid=$(<"$pidfile")
    if [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null; then
        echo "stopping package daemon $pidfile (pid $pid)"
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$pidfile"
done

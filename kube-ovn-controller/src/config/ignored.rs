//! The kube-ovn-controller flags this controller accepts but does not implement yet, so
//! that Kube-OVN's own Deployment args parse: each is logged as ignored.
//!
//! The list is Kube-OVN's `pkg/controller/config.go` (`ParseFlags`, at the commit named
//! in `tests/data/kube-ovn-controller-args.txt`) minus the flags [`super::ControllerFlags`]
//! implements, plus the two `start-controller.sh` may add and klog's flags (Kube-OVN adds
//! klog's Go flag set to its pflag set).

pub use kube_ovn_cmd::flags::{FlagKind, KLOG_FLAGS};

use FlagKind::{Bool, Value};

/// Accepted and ignored: (name, kind); [`KLOG_FLAGS`] are too.
pub const IGNORED_FLAGS: &[(&str, FlagKind)] = &[
    // pkg/controller/config.go
    ("ovn-timeout", Value),
    ("ovsdb-con-timeout", Value),
    ("ovsdb-con-maxretry", Value),
    ("ovsdb-inactivity-timeout", Value),
    ("cust-crd-retry-min-delay", Value),
    ("cust-crd-retry-max-delay", Value),
    ("default-gateway-check", Bool),
    ("default-logical-gateway", Bool),
    ("default-u2o-interconnection", Bool),
    ("enable-pprof", Bool),
    ("pprof-port", Value),
    ("secure-serving", Bool),
    ("nodepg-probe-time", Value),
    ("network-type", Value),
    ("default-provider-name", Value),
    ("default-interface-name", Value),
    ("default-exchange-link-name", Bool),
    ("default-vlan-name", Value),
    ("default-vlan-id", Value),
    ("pod-nic-type", Value),
    ("np-enforcement", Value),
    ("enable-eip-snat", Bool),
    ("enable-external-vpc", Bool),
    ("enable-ecmp", Bool),
    ("keep-vm-ip", Bool),
    ("enable-lb-svc", Bool),
    ("enable-metrics", Bool),
    ("enable-anp", Bool),
    ("enable-dns-name-resolver", Bool),
    ("cert-manager-ipsec-cert", Bool),
    ("enable-live-migration-optimize", Bool),
    ("external-gateway-config-ns", Value),
    ("external-gateway-switch", Value),
    ("external-gateway-net", Value),
    ("external-gateway-vlanid", Value),
    ("inspect-interval", Value),
    ("bfd-min-tx", Value),
    ("bfd-min-rx", Value),
    ("detect-mult", Value),
    ("image", Value),
    ("log-perm", Value),
    ("tls-min-version", Value),
    ("tls-max-version", Value),
    ("tls-cipher-suites", Value),
    ("non-primary-cni-mode", Bool),
    ("enable-record-tunnel-key", Bool),
    // dist/images/start-controller.sh
    ("enable-hardware-vtep", Bool),
    ("vtep-db-addr", Value),
];

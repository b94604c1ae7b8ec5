//! The controller's start-up writes to OVN NB, in Kube-OVN's order (`Controller.Run`
//! then `InitOVN`, `pkg/controller/controller.go` and `init.go`):
//!
//! 1. `NB_Global` options: `ls_dnat_mod_dl_dst`, `use_ct_inv_match=false`,
//!    `ls_ct_skip_dst_lport_ips`, `node_local_dns_ip`, `skip_conntrack_dst_cidrs`, and
//!    the `ipsec` column;
//! 2. the cluster router `ovn-cluster` (options `mac_binding_age_threshold=300`,
//!    `dynamic_neigh_routers=true`);
//! 3. with `--enable-lb`, the cluster's six load balancers (TCP/UDP/SCTP and their
//!    ClientIP session-affinity twins);
//! 4. the join switch `join` and its patch to the router: switch port `join-ovn-cluster`
//!    (`type=router`) and router port `ovn-cluster-join` on the join CIDR's gateway.
//!    Kube-OVN creates these from the `join` Subnet's first reconcile; here they also
//!    come at start-up, so the join switch exists before any Subnet is reconciled (the
//!    Subnet reconciler then ensures the same rows, adding its `other_config`).
//!
//! Every step is one transaction built from the replica by desired-state operations
//! ([`ovn_nb::NbTxn::lr_ensure`] and friends), so a step whose rows already look right
//! sends nothing: running the start-up twice writes nothing the second time. Every row
//! written carries `external_ids:vendor=kube-ovn`, and the ports name their owner
//! (`ls`/`lr`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use ovn_nb::{
    LbEnsure, LoadBalancerProtocol, LoadBalancerSelectionFields, NbClient, NbError, NbTxn,
};

use crate::config::ControllerConfig;
use kube_ovn_api::annotations::{CidrPair, IpPair};

pub use kube_ovn_api::naming::VENDOR;

/// Kube-OVN's `DefaultServiceSessionStickinessTimeout`: ClientIP affinity, seconds.
const SESSION_AFFINITY_TIMEOUT: &str = "10800";

/// One start-up step (one transaction).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BootstrapStep {
    /// `NB_Global` options.
    NbGlobal,
    /// The cluster router.
    ClusterRouter,
    /// The cluster load balancers.
    LoadBalancers,
    /// The join switch and its router patch.
    JoinSwitch,
}

impl fmt::Display for BootstrapStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BootstrapStep::NbGlobal => "NB_Global options",
            BootstrapStep::ClusterRouter => "cluster router",
            BootstrapStep::LoadBalancers => "cluster load balancers",
            BootstrapStep::JoinSwitch => "join switch",
        })
    }
}

/// Why the start-up stopped; the steps before `step` are committed, `step` is not.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BootstrapError {
    /// A step could not be built from the replica or was refused by the server.
    #[error("start-up step {step:?} ({step}) failed")]
    Step {
        /// The step.
        step: BootstrapStep,
        /// Why.
        #[source]
        source: NbError,
    },
}

/// Appends one step's operations to a transaction.
type StepBuilder<'c> = dyn Fn(&mut NbTxn<'_>) -> Result<(), NbError> + 'c;

/// How many operations each step sent (0: its rows already looked right).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BootstrapReport {
    /// Per step, in order.
    pub steps: Vec<(BootstrapStep, usize)>,
}

impl BootstrapReport {
    /// Operations sent by all steps.
    pub fn ops_written(&self) -> usize {
        self.steps.iter().map(|(_, n)| n).sum()
    }
}

/// Runs the start-up steps against `nb`, one transaction each, skipping steps with
/// nothing to write.
pub async fn bootstrap(
    nb: &NbClient,
    config: &ControllerConfig,
) -> Result<BootstrapReport, BootstrapError> {
    let mut report = BootstrapReport::default();
    let mac = random_mac();
    let steps: [(BootstrapStep, &StepBuilder); 4] = [
        (BootstrapStep::NbGlobal, &|txn| nb_global(txn, config)),
        (BootstrapStep::ClusterRouter, &|txn| {
            cluster_router(txn, config)
        }),
        (BootstrapStep::LoadBalancers, &|txn| {
            load_balancers(txn, config)
        }),
        (BootstrapStep::JoinSwitch, &|txn| {
            join_switch(txn, config, &mac)
        }),
    ];
    for (step, build) in steps {
        let fail = |source| BootstrapError::Step { step, source };
        let mut txn = nb.txn();
        build(&mut txn).map_err(fail)?;
        let n = txn.ops().len();
        if n > 0 {
            nb.commit(txn).await.map_err(fail)?;
        }
        tracing::info!(%step, ops = n, "start-up step done");
        report.steps.push((step, n));
    }
    Ok(report)
}

fn vendor() -> BTreeMap<String, String> {
    BTreeMap::from([("vendor".to_string(), VENDOR.to_string())])
}

pub(crate) fn with_vendor(key: &str, value: &str) -> BTreeMap<String, String> {
    let mut ids = vendor();
    ids.insert(key.to_string(), value.to_string());
    ids
}

fn pairs<const N: usize>(items: [(&str, String); N]) -> BTreeMap<String, String> {
    items.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

fn joined<T: ToString>(items: &[T]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// Step 1: `NB_Global` as `Controller.Run` sets it (Go's `%v` of a bool is
/// `true`/`false`; an empty list removes its option).
pub fn nb_global(txn: &mut NbTxn<'_>, config: &ControllerConfig) -> Result<(), NbError> {
    let mut set = pairs([
        ("ls_dnat_mod_dl_dst", config.ls_dnat_mod_dl_dst.to_string()),
        ("use_ct_inv_match", "false".to_string()),
        (
            "ls_ct_skip_dst_lport_ips",
            config.ls_ct_skip_dst_lport_ips.to_string(),
        ),
    ]);
    let mut remove = Vec::new();
    for (key, value) in [
        ("node_local_dns_ip", joined(&config.node_local_dns_ips)),
        (
            "skip_conntrack_dst_cidrs",
            joined(&config.skip_conntrack_dst_cidrs),
        ),
    ] {
        if value.is_empty() {
            remove.push(key);
        } else {
            set.insert(key.to_string(), value);
        }
    }
    txn.nb_global_ensure(&set, &remove, &vendor(), Some(config.enable_ovn_ipsec))?;
    Ok(())
}

/// Step 2: the cluster router (`initClusterRouter`).
pub fn cluster_router(txn: &mut NbTxn<'_>, config: &ControllerConfig) -> Result<(), NbError> {
    let options = pairs([
        ("mac_binding_age_threshold", "300".to_string()),
        ("dynamic_neigh_routers", "true".to_string()),
    ]);
    txn.lr_ensure(&config.cluster_router, &vendor(), &options)?;
    Ok(())
}

/// Step 3: the cluster load balancers (`initLoadBalancer` / `initLB` for the default
/// VPC), when `--enable-lb`.
///
/// Session-affinity twins hash on `ip_src` with `options:affinity_timeout=10800`.
/// (Kube-OVN on NB schema 7.11 also hashes `ipv6_src`; OVN 23.03's schema does not
/// list that field, so only `ip_src` is used.) Only the plain UDP balancer flushes
/// conntrack entries when its VIPs change (`ct_flush=true`): on the session twin,
/// shared by every ClientIP Service, any Service's change would reset the others'
/// affinity (Kube-OVN's `TestInitLB_SkipsCtFlushForSessionAffinityUDP`).
pub fn load_balancers(txn: &mut NbTxn<'_>, config: &ControllerConfig) -> Result<(), NbError> {
    if !config.enable_lb {
        return Ok(());
    }
    let lbs = &config.load_balancers;
    let table = [
        (&lbs.tcp, LoadBalancerProtocol::Tcp, false),
        (&lbs.tcp_session, LoadBalancerProtocol::Tcp, true),
        (&lbs.udp, LoadBalancerProtocol::Udp, false),
        (&lbs.udp_session, LoadBalancerProtocol::Udp, true),
        (&lbs.sctp, LoadBalancerProtocol::Sctp, false),
        (&lbs.sctp_session, LoadBalancerProtocol::Sctp, true),
    ];
    for (name, protocol, session) in table {
        let mut options = pairs([(
            "prefer_local_backend",
            config.enable_ovn_lb_prefer_local.to_string(),
        )]);
        let mut selection_fields = BTreeSet::new();
        if session {
            selection_fields.insert(LoadBalancerSelectionFields::IpSrc);
            options.insert("affinity_timeout".into(), SESSION_AFFINITY_TIMEOUT.into());
        } else if protocol == LoadBalancerProtocol::Udp {
            options.insert("ct_flush".into(), "true".into());
        }
        let wanted = LbEnsure {
            protocol: Some(protocol),
            selection_fields,
            options,
            external_ids: vendor(),
        };
        txn.lb_ensure(name, &wanted)?;
    }
    Ok(())
}

/// The router port's networks: each gateway with its CIDR's prefix length
/// (`util.GetIpAddrWithMask`), e.g. `100.64.0.1/16`.
pub fn gateway_networks(gateway: &IpPair, cidr: &CidrPair) -> BTreeSet<String> {
    let v4 = gateway
        .v4
        .zip(cidr.v4)
        .map(|(ip, net)| format!("{ip}/{}", net.prefix_len()));
    let v6 = gateway
        .v6
        .zip(cidr.v6)
        .map(|(ip, net)| format!("{ip}/{}", net.prefix_len()));
    v4.into_iter().chain(v6).collect()
}

/// Step 4: the join switch and its patch to the cluster router: switch port
/// `<switch>-<router>` and router port `<router>-<switch>` (`mac` only if created).
pub fn join_switch(
    txn: &mut NbTxn<'_>,
    config: &ControllerConfig,
    mac: &str,
) -> Result<(), NbError> {
    let (ls, lr) = (&config.node_switch.name, &config.cluster_router);
    let lsp = format!("{ls}-{lr}");
    let lrp = format!("{lr}-{ls}");
    txn.ls_ensure(ls, &vendor(), &BTreeMap::new())?;
    let networks = gateway_networks(&config.node_switch.gateway, &config.node_switch.cidr);
    txn.lrp_ensure(lr, &lrp, mac, &networks, &with_vendor("lr", lr))?;
    txn.lsp_ensure_router_port(ls, &lsp, &lrp, &with_vendor("ls", ls))?;
    Ok(())
}

/// A MAC as Kube-OVN's `util.GenerateMac` makes them: `00:00:00` then three random octets.
pub fn random_mac() -> String {
    let [a, b, c]: [u8; 3] = rand::random();
    format!("00:00:00:{a:02x}:{b:02x}:{c:02x}")
}

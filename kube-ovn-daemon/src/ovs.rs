//! The `Open_vSwitch` half of the node bootstrap: one transaction built from the
//! replica that writes only what differs from the desired state, as Kube-OVN's
//! `start-ovs.sh`, `InitNodeGateway` and `configureNodeNic` do with `ovs-vsctl`:
//!
//! ```text
//! ovs-vsctl set Open_vSwitch . external_ids:system-id=.. external_ids:ovn-remote=.. ...
//! ovs-vsctl --may-exist add-br br-int -- set Bridge br-int datapath_type=netdev \
//!     fail_mode=secure other_config:disable-in-band=true
//! ovs-vsctl --may-exist add-port br-int ovn0 -- set Interface ovn0 type=internal \
//!     external_ids:iface-id=node-<node> external_ids:ip=<ip> external_ids:vendor=kube-ovn \
//!     mtu_request=<mtu> mac=\"<join mac>\"
//! ```
//!
//! The Interface `mac` column makes ovs-vswitchd give the internal port the join MAC
//! itself (and again after a restart); Kube-OVN sets it through netlink only, which
//! [`super::ovn0`] does as well. `mtu_request` is what Kube-OVN sets on a kernel
//! datapath internal port; on the userspace datapath it is what vswitchd applies to the
//! tap device. When anything is written, `next_cfg` is bumped in the same transaction
//! and [`commit`] waits for vswitchd's `cur_cfg` to reach it, as `ovs-vsctl` does
//! without `--no-wait`: after that the `ovn0` device exists with the MAC and MTU.

use std::collections::BTreeMap;
use std::time::Duration;

use ovs_vsctl::ovsdb::typed;
use ovs_vsctl::{
    Bridge, BridgeFailMode, Interface, InterfaceSpec, OpenVSwitch, Port, VsClient, VsError, VsTxn,
};

use super::spec::{Plan, INTEGRATION_BRIDGE, NODE_NIC};
use super::NodeBootstrap;
use kube_ovn_api::naming::VENDOR;

/// One kind of write the bootstrap made to `Open_vSwitch`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OvsChange {
    /// `Open_vSwitch` `external_ids` keys set (or removed, when unset).
    ExternalIds(Vec<String>),
    /// `br-int` created.
    BridgeCreated,
    /// `br-int` columns set (`datapath_type`, `fail_mode`, `other_config`).
    BridgeColumns(Vec<&'static str>),
    /// The `ovn0` port created.
    PortCreated,
    /// `ovn0` Interface columns set.
    InterfaceColumns(Vec<&'static str>),
}

/// `Open_vSwitch` `external_ids` keys the bootstrap owns; other keys are left alone.
pub(crate) fn wanted_external_ids(boot: &NodeBootstrap) -> BTreeMap<String, Option<String>> {
    let mappings = boot
        .bridge_mappings
        .iter()
        .map(|(network, bridge)| format!("{network}:{bridge}"))
        .collect::<Vec<_>>()
        .join(",");
    let pairs = [
        ("system-id", Some(boot.system_id.clone())),
        ("hostname", Some(boot.hostname.clone())),
        ("ovn-remote", Some(boot.ovn_remotes.join(","))),
        ("ovn-encap-type", Some(boot.encap_type.as_str().to_string())),
        ("ovn-encap-ip", Some(boot.encap_ip.to_string())),
        ("ovn-encap-csum", Some(boot.encap_csum.to_string())),
        // as on Kube-OVN's nodes: ovn-controller holds the whole southbound database
        // instead of widening its monitor conditions when a pod's port first makes a
        // datapath local (one SB round trip less before `ovn-installed`)
        ("ovn-monitor-all", Some("true".to_string())),
        // ovn-controller reconciles br-int's datapath_type to this value, so it must agree
        (
            "ovn-bridge-datapath-type",
            Some(boot.datapath_type.to_string()),
        ),
        (
            "ovn-bridge-mappings",
            (!mappings.is_empty()).then_some(mappings),
        ),
    ];
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// The `ovn0` Interface's `external_ids`: `ip` is the join addresses without prefix.
fn interface_external_ids(boot: &NodeBootstrap, plan: &Plan) -> BTreeMap<String, String> {
    let ips = plan
        .addresses
        .iter()
        .map(|a| a.addr().to_string())
        .collect::<Vec<_>>()
        .join(",");
    BTreeMap::from([
        ("iface-id".to_string(), boot.port_name()),
        ("ip".to_string(), ips),
        ("vendor".to_string(), VENDOR.to_string()),
    ])
}

/// Appends the writes that make `Open_vSwitch` match `boot` to `txn`; returns what
/// they change (empty: nothing to write).
pub(crate) fn build(
    txn: &mut VsTxn<'_>,
    vs: &VsClient,
    boot: &NodeBootstrap,
    plan: &Plan,
) -> Result<Vec<OvsChange>, VsError> {
    let mut changes = Vec::new();
    external_ids(txn, vs, boot, &mut changes)?;
    bridge(txn, vs, boot, &mut changes)?;
    node_nic(txn, vs, boot, plan, &mut changes)?;
    Ok(changes)
}

fn external_ids(
    txn: &mut VsTxn<'_>,
    vs: &VsClient,
    boot: &NodeBootstrap,
    changes: &mut Vec<OvsChange>,
) -> Result<(), VsError> {
    let current = vs
        .store()
        .rows::<OpenVSwitch>()?
        .into_iter()
        .next()
        .map(|r| r.row.external_ids)
        .unwrap_or_default();
    let mut set = BTreeMap::new();
    let mut remove = Vec::new();
    for (key, value) in wanted_external_ids(boot) {
        match value {
            Some(v) if current.get(&key) != Some(&v) => {
                set.insert(key, v);
            }
            None if current.contains_key(&key) => remove.push(key),
            _ => {}
        }
    }
    let mut keys: Vec<String> = set.keys().cloned().collect();
    if !set.is_empty() {
        txn.set_external_ids(set)?;
    }
    if !remove.is_empty() {
        let root = txn.root()?;
        txn.guard_exists(root);
        txn.push(
            typed::mutate(OpenVSwitch::ROW_UUID.eq(root))
                .with([OpenVSwitch::EXTERNAL_IDS.delete_keys(remove.clone())]),
        );
        keys.extend(remove);
    }
    if !keys.is_empty() {
        changes.push(OvsChange::ExternalIds(keys));
    }
    Ok(())
}

fn bridge(
    txn: &mut VsTxn<'_>,
    vs: &VsClient,
    boot: &NodeBootstrap,
    changes: &mut Vec<OvsChange>,
) -> Result<(), VsError> {
    let dp = boot.datapath_type.as_str();
    let existing = vs
        .store()
        .by_name::<Bridge>(INTEGRATION_BRIDGE)?
        .into_iter()
        .next();
    let (id, current) = match existing {
        Some(stored) => (stored.id, stored.row),
        None => {
            let id = txn.add_br(INTEGRATION_BRIDGE)?;
            changes.push(OvsChange::BridgeCreated);
            (id, Bridge::default())
        }
    };
    let mut columns = Vec::new();
    let datapath = (current.datapath_type != dp).then_some(dp);
    let fail_mode =
        (current.fail_mode != Some(BridgeFailMode::Secure)).then_some(BridgeFailMode::Secure);
    if datapath.is_some() || fail_mode.is_some() {
        columns.extend(datapath.map(|_| "datapath_type"));
        columns.extend(fail_mode.as_ref().map(|_| "fail_mode"));
        txn.set_bridge(INTEGRATION_BRIDGE, datapath, fail_mode, None)?;
    }
    // as ovn-controller creates br-int: no in-band flows on a bridge it owns
    let in_band = ("disable-in-band".to_string(), "true".to_string());
    if current.other_config.get(&in_band.0) != Some(&in_band.1) {
        txn.guard_exists(id);
        txn.push(
            typed::mutate(Bridge::ROW_UUID.eq(id)).with(Bridge::OTHER_CONFIG.set_keys([in_band])),
        );
        columns.push("other_config");
    }
    if !columns.is_empty() && !changes.contains(&OvsChange::BridgeCreated) {
        changes.push(OvsChange::BridgeColumns(columns));
    }
    Ok(())
}

fn node_nic(
    txn: &mut VsTxn<'_>,
    vs: &VsClient,
    boot: &NodeBootstrap,
    plan: &Plan,
    changes: &mut Vec<OvsChange>,
) -> Result<(), VsError> {
    let ids = interface_external_ids(boot, plan);
    let mac = plan.mac.to_string();
    let mtu = i64::from(boot.mtu);
    let port_exists = !vs.store().by_name::<Port>(NODE_NIC)?.is_empty();
    let iface = vs
        .store()
        .by_name::<Interface>(NODE_NIC)?
        .into_iter()
        .next();
    let (true, Some(iface)) = (port_exists, iface) else {
        let spec = InterfaceSpec {
            iface_type: "internal".into(),
            external_ids: ids,
            mtu_request: Some(mtu),
            ..Default::default()
        };
        txn.add_port(INTEGRATION_BRIDGE, NODE_NIC, spec)?;
        // the interface row was inserted by this transaction: address it by its name
        txn.push(typed::update(Interface::NAME.eq(NODE_NIC)).set(Interface::MAC.to(Some(mac))));
        changes.push(OvsChange::PortCreated);
        return Ok(());
    };
    // an ovn0 on another bridge is an error (`WrongBridge`), as with `--may-exist add-port`
    txn.may_exist()
        .add_port(INTEGRATION_BRIDGE, NODE_NIC, InterfaceSpec::default())?;
    let mut columns = Vec::new();
    if iface.r#type != "internal" {
        txn.set(iface.id, Interface::TYPE, "internal".to_string());
        columns.push("type");
    }
    let stale: BTreeMap<String, String> = ids
        .into_iter()
        .filter(|(k, v)| iface.external_ids.get(k) != Some(v))
        .collect();
    if !stale.is_empty() {
        txn.set_interface_external_ids(NODE_NIC, stale)?;
        columns.push("external_ids");
    }
    if iface.mtu_request != Some(mtu) {
        txn.set(iface.id, Interface::MTU_REQUEST, Some(mtu));
        columns.push("mtu_request");
    }
    if iface.mac.as_deref() != Some(mac.as_str()) {
        txn.set(iface.id, Interface::MAC, Some(mac));
        columns.push("mac");
    }
    if !columns.is_empty() {
        changes.push(OvsChange::InterfaceColumns(columns));
    }
    Ok(())
}

/// Commits `txn` with `next_cfg` bumped, then waits until ovs-vswitchd reports it has
/// applied the change (`cur_cfg >= next_cfg`), up to `timeout`.
pub(crate) async fn commit(
    vs: &VsClient,
    mut txn: VsTxn<'_>,
    timeout: Duration,
) -> Result<(), VsError> {
    let next_cfg = vs
        .store()
        .rows::<OpenVSwitch>()?
        .first()
        .map(|r| r.row.next_cfg)
        .unwrap_or(0)
        + 1;
    let root = txn.root()?;
    txn.guard_exists(root);
    txn.push(typed::mutate(OpenVSwitch::ROW_UUID.eq(root)).with([OpenVSwitch::NEXT_CFG.add(1)]));
    vs.commit(txn).await?;
    let what = format!("ovs-vswitchd to apply configuration {next_cfg} (cur_cfg)");
    vs.db()
        .wait_for::<OpenVSwitch>(&what, timeout, |r| r.cur_cfg >= next_cfg)
        .await?;
    Ok(())
}

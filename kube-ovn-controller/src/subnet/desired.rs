//! The northbound rows of a valid Subnet, written by desired-state operations (a
//! second run on an unchanged database appends nothing), and their removal.
//!
//! * `Logical_Switch{name=<subnet>}`, `external_ids` `vendor=kube-ovn` and its owner
//!   `subnet=<subnet>`; `other_config` `subnet` (the IPv4 CIDR), `exclude_ips` (its
//!   IPv4 exclusions in OVN's form, space-separated, ranges `a..b`) and `gateway`
//!   (Kube-OVN's `v4,v6` form);
//! * the patch to the VPC's router: switch port `<ls>-<lr>` (`type=router`,
//!   `external_ids:ls`) and router port `<lr>-<ls>` on the gateway(s) with the CIDR's
//!   prefix length (`external_ids:lr`), as the join switch's at start-up.

use std::collections::BTreeMap;

use ovn_nb::{LogicalRouterPort, LogicalSwitch, NbError, NbTxn};

use super::validate::ValidSubnet;
use crate::bootstrap::{gateway_networks, with_vendor, VENDOR};
use kube_ovn_api::annotations::{AnnotationValue, ExcludeIp};

/// `external_ids` of a Subnet's logical switch.
pub fn switch_external_ids(subnet: &str) -> BTreeMap<String, String> {
    with_vendor("subnet", subnet)
}

/// `other_config` of a Subnet's logical switch (OVN reads `subnet`/`exclude_ips` as
/// IPv4 only).
pub fn switch_other_config(subnet: &ValidSubnet) -> BTreeMap<String, String> {
    let mut config = BTreeMap::new();
    if let Some(v4) = subnet.cidr.v4 {
        config.insert("subnet".to_string(), v4.to_string());
        let v4_excludes: Vec<String> = subnet
            .exclude_ips
            .iter()
            .filter(|e| match e {
                ExcludeIp::Addr(a) | ExcludeIp::Range(a, _) => a.is_ipv4(),
            })
            .map(ToString::to_string)
            .collect();
        if !v4_excludes.is_empty() {
            config.insert("exclude_ips".to_string(), v4_excludes.join(" "));
        }
    }
    config.insert("gateway".to_string(), subnet.gateway.render());
    config
}

/// The patch port names: (`<ls>-<lr>`, `<lr>-<ls>`).
pub fn patch_port_names(ls: &str, lr: &str) -> (String, String) {
    (format!("{ls}-{lr}"), format!("{lr}-{ls}"))
}

/// Appends the operations making the subnet's rows look as desired; `mac` is used
/// only if the router port is created.
pub fn write_subnet(txn: &mut NbTxn<'_>, subnet: &ValidSubnet, mac: &str) -> Result<(), NbError> {
    let (ls, lr) = (subnet.name.as_str(), subnet.vpc.as_str());
    let (lsp, lrp) = patch_port_names(ls, lr);
    txn.ls_ensure(ls, &switch_external_ids(ls), &switch_other_config(subnet))?;
    let networks = gateway_networks(&subnet.gateway, &subnet.cidr);
    txn.lrp_ensure(lr, &lrp, mac, &networks, &with_vendor("lr", lr))?;
    txn.lsp_ensure_router_port(ls, &lsp, &lrp, &with_vendor("ls", ls))?;
    Ok(())
}

fn ours(external_ids: &BTreeMap<String, String>) -> bool {
    external_ids.get("vendor").map(String::as_str) == Some(VENDOR)
}

/// Appends the operations removing a subnet's switch (its ports go with it) and its
/// router port, each only if present and marked `vendor=kube-ovn`: rows someone else
/// made under the same names are left alone.
pub fn delete_subnet(txn: &mut NbTxn<'_>, ls: &str, lr: &str) -> Result<(), NbError> {
    let (_, lrp) = patch_port_names(ls, lr);
    let store = txn.store();
    if let Some(port) = store.by_name::<LogicalRouterPort>(&lrp)?.into_iter().next() {
        if ours(&port.row.external_ids) {
            txn.if_exists().lrp_del(&lrp)?;
        }
    }
    if let Some(switch) = store.by_name::<LogicalSwitch>(ls)?.into_iter().next() {
        if ours(&switch.row.external_ids) {
            txn.if_exists().ls_del(ls)?;
        }
    }
    Ok(())
}

//! A pod NIC's logical switch port, as Kube-OVN writes it (`buildLogicalSwitchPort`):
//! `<pod>.<namespace>` on the subnet's switch, `addresses` `"<mac> <ipv4> <ipv6>"`,
//! `port_security` the same only when the pod's `port_security` annotation is `"true"`,
//! and `external_ids` `vendor=kube-ovn`, `ls`, `pod` (`<namespace>/<pod>`), `namespace`
//! and `ip`. Writes are desired-state: an unchanged port costs no operation.

use std::collections::{BTreeMap, BTreeSet};

use ipam::Allocation;
use ovn_nb::{LogicalSwitchPort, NbError, NbTxn};

use crate::bootstrap::VENDOR;

/// The wanted state of a pod's port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortSpec {
    /// `<pod>.<namespace>` (from `kube_ovn_api::naming::pod_port_name`).
    pub name: String,
    /// The subnet's logical switch.
    pub switch: String,
    /// `addresses`.
    pub addresses: BTreeSet<String>,
    /// `port_security`.
    pub port_security: BTreeSet<String>,
    /// `external_ids` keys the controller owns.
    pub external_ids: BTreeMap<String, String>,
}

/// `"<mac> <ipv4> <ipv6>"`, the families the allocation has.
pub fn address_entry(alloc: &Allocation) -> String {
    let mut parts: Vec<String> = alloc.mac.iter().map(ToString::to_string).collect();
    parts.extend(alloc.addresses().map(|a| a.to_string()));
    parts.join(" ")
}

/// The port a pod NIC should have.
pub fn desired_port(
    port: &str,
    namespace: &str,
    pod: &str,
    subnet: &str,
    alloc: &Allocation,
    port_security: bool,
) -> PortSpec {
    let entry = address_entry(alloc);
    let external_ids = BTreeMap::from([
        ("vendor".to_string(), VENDOR.to_string()),
        ("ls".to_string(), subnet.to_string()),
        ("pod".to_string(), format!("{namespace}/{pod}")),
        ("namespace".to_string(), namespace.to_string()),
        ("ip".to_string(), alloc.ip_address_annotation()),
    ]);
    PortSpec {
        name: port.to_string(),
        switch: subnet.to_string(),
        addresses: BTreeSet::from([entry.clone()]),
        port_security: if port_security {
            BTreeSet::from([entry])
        } else {
            BTreeSet::new()
        },
        external_ids,
    }
}

/// Appends what makes the port look like `spec`. A port of that name on another
/// switch fails with [`NbError::WrongOwner`]: the caller removes it first.
pub fn write_port(txn: &mut NbTxn<'_>, spec: &PortSpec) -> Result<(), NbError> {
    let existing = txn
        .store()
        .by_name::<LogicalSwitchPort>(&spec.name)?
        .into_iter()
        .next();
    let Some(existing) = existing else {
        let row = LogicalSwitchPort {
            name: spec.name.clone(),
            addresses: spec.addresses.clone(),
            port_security: spec.port_security.clone(),
            external_ids: spec.external_ids.clone(),
            ..Default::default()
        };
        txn.lsp_add_row(&spec.switch, row)?;
        return Ok(());
    };
    // checks the port is on the right switch (WrongOwner otherwise)
    txn.may_exist().lsp_add_row(
        &spec.switch,
        LogicalSwitchPort {
            name: spec.name.clone(),
            ..Default::default()
        },
    )?;
    let row = existing.row;
    if row.addresses != spec.addresses {
        txn.lsp_set_addresses(&spec.name, spec.addresses.iter().cloned())?;
    }
    if row.port_security != spec.port_security {
        txn.lsp_set_port_security(&spec.name, spec.port_security.iter().cloned())?;
    }
    let changed: Vec<(String, String)> = spec
        .external_ids
        .iter()
        .filter(|(k, v)| row.external_ids.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !changed.is_empty() {
        txn.lsp_set_external_ids(&spec.name, changed)?;
    }
    Ok(())
}

/// Appends the removal of port `name` if it exists and is Kube-OVN's
/// (`vendor=kube-ovn`); whether it did.
pub fn delete_port(txn: &mut NbTxn<'_>, name: &str) -> Result<bool, NbError> {
    let existing = txn.store().by_name::<LogicalSwitchPort>(name)?;
    let ours = existing
        .first()
        .is_some_and(|p| p.row.external_ids.get("vendor").map(String::as_str) == Some(VENDOR));
    if ours {
        txn.if_exists().lsp_del(name)?;
    }
    Ok(ours)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_port_security_follow_kube_ovn() {
        let alloc = Allocation {
            v4: Some("10.16.0.5".parse().unwrap()),
            v6: Some("fd00::5".parse().unwrap()),
            mac: Some(ipam::Mac([0x00, 0x00, 0x00, 0x53, 0x6b, 0xb6])),
        };
        let spec = desired_port(
            "web.default",
            "default",
            "web",
            "ovn-default",
            &alloc,
            false,
        );
        assert_eq!(
            spec.addresses,
            BTreeSet::from(["00:00:00:53:6b:b6 10.16.0.5 fd00::5".to_string()])
        );
        assert!(spec.port_security.is_empty());
        assert_eq!(spec.external_ids["pod"], "default/web");
        assert_eq!(spec.external_ids["ip"], "10.16.0.5,fd00::5");
        let secured = desired_port("web.default", "default", "web", "ovn-default", &alloc, true);
        assert_eq!(secured.port_security, secured.addresses);
    }
}

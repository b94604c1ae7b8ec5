//! ACLs on switches and port groups, port groups, address sets
//! (`acl-*`, `pg-*`, address set rows).

use std::collections::{BTreeMap, BTreeSet};

use ovsdb::typed::{RowId, Table};

use super::NbTxn;
use crate::{
    Acl, AclAction, AclDirection, AclSeverity, AddressSet, LogicalSwitch, LogicalSwitchPort,
    NbError, PortGroup,
};

/// Where an ACL lives.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AclTarget {
    /// A logical switch, by name.
    Switch(String),
    /// A port group, by name.
    PortGroup(String),
}

/// An ACL (`acl-add [--label=L] [--name=N] [--log] [--severity=S] ENTITY DIRECTION PRIORITY MATCH ACTION`).
///
/// `options` carries e.g. `apply-after-lb=true`. The `tier` column is not in the
/// OVN 23.03 schema; against a newer server, set it with [`NbTxn::push`] on a
/// model generated from that schema.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AclSpec {
    /// `from-lport` or `to-lport`.
    pub direction: AclDirection,
    /// 0..=32767.
    pub priority: i64,
    /// Logical flow match.
    pub r#match: String,
    /// `allow`, `allow-related`, `allow-stateless`, `drop`, `reject`.
    pub action: AclAction,
    /// Label carried into conntrack and logs (0..=4294967295).
    pub label: i64,
    /// Name shown in logs.
    pub name: Option<String>,
    /// Log packets hitting the ACL.
    pub log: bool,
    /// Log severity.
    pub severity: Option<AclSeverity>,
    /// Log meter.
    pub meter: Option<String>,
    /// `options`, e.g. `apply-after-lb`.
    pub options: BTreeMap<String, String>,
    /// `external_ids`.
    pub external_ids: BTreeMap<String, String>,
}

enum Owner {
    Switch(RowId<LogicalSwitch>),
    Group(RowId<PortGroup>),
}

impl NbTxn<'_> {
    fn acl_owner(&self, target: &AclTarget) -> Result<(Owner, BTreeSet<RowId<Acl>>), NbError> {
        Ok(match target {
            AclTarget::Switch(name) => {
                let id = self.require::<LogicalSwitch>(name)?;
                (
                    Owner::Switch(id),
                    self.row(id)?.map(|r| r.acls).unwrap_or_default(),
                )
            }
            AclTarget::PortGroup(name) => {
                let id = self.require::<PortGroup>(name)?;
                (
                    Owner::Group(id),
                    self.row(id)?.map(|r| r.acls).unwrap_or_default(),
                )
            }
        })
    }

    /// `acl-add`: an ACL with the same direction, priority and match on the same
    /// entity is a conflict (`may_exist`: no-op).
    pub fn acl_add(&mut self, target: &AclTarget, acl: AclSpec) -> Result<RowId<Acl>, NbError> {
        let may_exist = self.take_may_exist();
        if !(0..=32767).contains(&acl.priority) {
            return Err(NbError::InvalidArgument {
                what: "ACL priority",
                value: acl.priority.to_string(),
                why: "must be in 0..=32767",
            });
        }
        let (owner, existing) = self.acl_owner(target)?;
        for old in self.rows_of(existing)? {
            if old.direction == acl.direction
                && old.priority == acl.priority
                && old.r#match == acl.r#match
            {
                let what = format!("{} {} {}", acl.direction, acl.priority, acl.r#match);
                Self::exists(Acl::TABLE_NAME, &what, may_exist)?;
                return Ok(old.id);
            }
        }
        let row = Acl {
            direction: acl.direction,
            priority: acl.priority,
            r#match: acl.r#match,
            action: acl.action,
            label: acl.label,
            name: acl.name,
            log: acl.log,
            severity: acl.severity,
            meter: acl.meter,
            options: acl.options,
            external_ids: acl.external_ids,
        };
        let id = self.insert(&row);
        match owner {
            Owner::Switch(ls) => self.mutate(ls, LogicalSwitch::ACLS.insert([id])),
            Owner::Group(pg) => self.mutate(pg, PortGroup::ACLS.insert([id])),
        }
        Ok(id)
    }

    /// `acl-del ENTITY [DIRECTION [PRIORITY MATCH]]`: returns how many were removed.
    pub fn acl_del(
        &mut self,
        target: &AclTarget,
        direction: Option<AclDirection>,
        priority_match: Option<(i64, &str)>,
    ) -> Result<usize, NbError> {
        let (owner, existing) = self.acl_owner(target)?;
        let doomed: Vec<RowId<Acl>> = self
            .rows_of(existing)?
            .into_iter()
            .filter(|a| direction.as_ref().is_none_or(|d| &a.direction == d))
            .filter(|a| priority_match.is_none_or(|(p, m)| a.priority == p && a.r#match == m))
            .map(|a| a.id)
            .collect();
        if !doomed.is_empty() {
            match owner {
                Owner::Switch(ls) => {
                    self.mutate(ls, LogicalSwitch::ACLS.delete(doomed.iter().copied()))
                }
                Owner::Group(pg) => self.mutate(pg, PortGroup::ACLS.delete(doomed.iter().copied())),
            }
        }
        Ok(doomed.len())
    }

    fn port_ids(&self, ports: &[&str]) -> Result<BTreeSet<RowId<LogicalSwitchPort>>, NbError> {
        ports
            .iter()
            .map(|p| self.require::<LogicalSwitchPort>(p))
            .collect()
    }

    /// `pg-add NAME [PORT...]`.
    pub fn pg_add(&mut self, name: &str, ports: &[&str]) -> Result<RowId<PortGroup>, NbError> {
        let may_exist = self.take_may_exist();
        let ports = self.port_ids(ports)?;
        if let Some(id) = self.lookup::<PortGroup>(name)? {
            Self::exists(PortGroup::TABLE_NAME, name, may_exist)?;
            self.mutate(id, PortGroup::PORTS.insert(ports));
            return Ok(id);
        }
        Ok(self.insert_named(
            name,
            &PortGroup {
                name: name.to_string(),
                ports,
                ..Default::default()
            },
        ))
    }

    /// `pg-set-ports NAME PORT...`: replaces the members.
    pub fn pg_set_ports(&mut self, name: &str, ports: &[&str]) -> Result<(), NbError> {
        let id = self.require::<PortGroup>(name)?;
        let ports = self.port_ids(ports)?;
        self.set(id, PortGroup::PORTS, ports);
        Ok(())
    }

    /// Adds members to a port group.
    pub fn pg_add_ports(&mut self, name: &str, ports: &[&str]) -> Result<(), NbError> {
        let id = self.require::<PortGroup>(name)?;
        let ports = self.port_ids(ports)?;
        self.mutate(id, PortGroup::PORTS.insert(ports));
        Ok(())
    }

    /// Removes members from a port group (ports that do not exist are ignored).
    pub fn pg_remove_ports(&mut self, name: &str, ports: &[&str]) -> Result<(), NbError> {
        let id = self.require::<PortGroup>(name)?;
        let mut ids = BTreeSet::new();
        for port in ports {
            if let Some(p) = self.lookup::<LogicalSwitchPort>(port)? {
                ids.insert(p);
            }
        }
        self.mutate(id, PortGroup::PORTS.delete(ids));
        Ok(())
    }

    /// `pg-del NAME`.
    pub fn pg_del(&mut self, name: &str) -> Result<(), NbError> {
        let if_exists = self.take_if_exists();
        match self.lookup::<PortGroup>(name)? {
            Some(id) => {
                self.delete_row(id);
                Ok(())
            }
            None => Self::missing(PortGroup::TABLE_NAME, name, if_exists),
        }
    }

    /// Creates an address set (`may_exist`: sets its addresses instead).
    pub fn address_set_add<S: Into<String>>(
        &mut self,
        name: &str,
        addresses: impl IntoIterator<Item = S>,
    ) -> Result<RowId<AddressSet>, NbError> {
        let may_exist = self.take_may_exist();
        let addresses: BTreeSet<String> = addresses.into_iter().map(Into::into).collect();
        if let Some(id) = self.lookup::<AddressSet>(name)? {
            Self::exists(AddressSet::TABLE_NAME, name, may_exist)?;
            self.set(id, AddressSet::ADDRESSES, addresses);
            return Ok(id);
        }
        Ok(self.insert_named(
            name,
            &AddressSet {
                name: name.to_string(),
                addresses,
                ..Default::default()
            },
        ))
    }

    /// Adds and removes addresses of an address set.
    pub fn address_set_update(
        &mut self,
        name: &str,
        add: &[&str],
        remove: &[&str],
    ) -> Result<(), NbError> {
        let id = self.require::<AddressSet>(name)?;
        if !remove.is_empty() {
            self.mutate(
                id,
                AddressSet::ADDRESSES.delete(remove.iter().map(|a| a.to_string())),
            );
        }
        if !add.is_empty() {
            self.mutate(
                id,
                AddressSet::ADDRESSES.insert(add.iter().map(|a| a.to_string())),
            );
        }
        Ok(())
    }

    /// Deletes an address set.
    pub fn address_set_del(&mut self, name: &str) -> Result<(), NbError> {
        let if_exists = self.take_if_exists();
        match self.lookup::<AddressSet>(name)? {
            Some(id) => {
                self.delete_row(id);
                Ok(())
            }
            None => Self::missing(AddressSet::TABLE_NAME, name, if_exists),
        }
    }
}

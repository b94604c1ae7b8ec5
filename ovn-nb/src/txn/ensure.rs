//! Desired-state operations: each `*_ensure` makes one named row look as asked and
//! writes only what differs from the replica, so calling it again on an unchanged
//! database appends no operation at all (what a reconciler that runs on every event
//! needs; the `*_add` commands of `ovn-nbctl` rewrite or fail instead).
//!
//! Map columns (`external_ids`, `options`, `other_config`) are ensured key by key: the
//! given keys get the given values, every other key is left to its other writers
//! (`ovn-northd`, an operator, another controller).

use std::collections::{BTreeMap, BTreeSet};

use ovsdb::typed::{Column, RowId, Table};

use super::NbTxn;
use crate::{
    LoadBalancer, LoadBalancerProtocol, LoadBalancerSelectionFields, LogicalRouter,
    LogicalRouterPort, LogicalSwitch, LogicalSwitchPort, NbError, NbGlobal,
};

/// The wanted state of a load balancer ([`NbTxn::lb_ensure`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LbEnsure {
    /// `protocol` (`tcp` when None, as OVN reads an empty column).
    pub protocol: Option<LoadBalancerProtocol>,
    /// `selection_fields`, exactly.
    pub selection_fields: BTreeSet<LoadBalancerSelectionFields>,
    /// `options` keys to hold these values.
    pub options: BTreeMap<String, String>,
    /// `external_ids` keys to hold these values.
    pub external_ids: BTreeMap<String, String>,
}

/// The pairs of `wanted` that `current` lacks or holds with another value.
fn changed_pairs(
    current: &BTreeMap<String, String>,
    wanted: &BTreeMap<String, String>,
) -> Vec<(String, String)> {
    wanted
        .iter()
        .filter(|(k, v)| current.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

impl NbTxn<'_> {
    /// Sets the keys of a map column whose values differ; nothing when none do.
    fn ensure_keys<T: Table>(
        &mut self,
        id: RowId<T>,
        column: Column<T, BTreeMap<String, String>>,
        current: &BTreeMap<String, String>,
        wanted: &BTreeMap<String, String>,
    ) {
        let pairs = changed_pairs(current, wanted);
        if !pairs.is_empty() {
            self.set_keys(id, column, pairs);
        }
    }

    /// The replicated row `id`, or None when this transaction created it.
    fn replicated<T: Table>(&self, id: RowId<T>) -> Result<Option<T>, NbError> {
        self.row(id)
    }

    /// Ensures router `name` exists and holds the given `external_ids` and `options` keys.
    pub fn lr_ensure(
        &mut self,
        name: &str,
        external_ids: &BTreeMap<String, String>,
        options: &BTreeMap<String, String>,
    ) -> Result<RowId<LogicalRouter>, NbError> {
        let Some(id) = self.lookup::<LogicalRouter>(name)? else {
            self.guard_name_free(LogicalRouter::NAME, name);
            let row = LogicalRouter {
                name: name.to_string(),
                external_ids: external_ids.clone(),
                options: options.clone(),
                ..Default::default()
            };
            return Ok(self.insert_named(name, &row));
        };
        if let Some(row) = self.replicated(id)? {
            self.ensure_keys(
                id,
                LogicalRouter::EXTERNAL_IDS,
                &row.external_ids,
                external_ids,
            );
            self.ensure_keys(id, LogicalRouter::OPTIONS, &row.options, options);
        }
        Ok(id)
    }

    /// Ensures switch `name` exists and holds the given `external_ids` and
    /// `other_config` keys.
    pub fn ls_ensure(
        &mut self,
        name: &str,
        external_ids: &BTreeMap<String, String>,
        other_config: &BTreeMap<String, String>,
    ) -> Result<RowId<LogicalSwitch>, NbError> {
        let Some(id) = self.lookup::<LogicalSwitch>(name)? else {
            self.guard_name_free(LogicalSwitch::NAME, name);
            let row = LogicalSwitch {
                name: name.to_string(),
                external_ids: external_ids.clone(),
                other_config: other_config.clone(),
                ..Default::default()
            };
            return Ok(self.insert_named(name, &row));
        };
        if let Some(row) = self.replicated(id)? {
            self.ensure_keys(
                id,
                LogicalSwitch::EXTERNAL_IDS,
                &row.external_ids,
                external_ids,
            );
            self.ensure_keys(
                id,
                LogicalSwitch::OTHER_CONFIG,
                &row.other_config,
                other_config,
            );
        }
        Ok(id)
    }

    /// Ensures load balancer `name` exists as `wanted` (its `vips` are left alone).
    pub fn lb_ensure(
        &mut self,
        name: &str,
        wanted: &LbEnsure,
    ) -> Result<RowId<LoadBalancer>, NbError> {
        let Some(id) = self.lookup::<LoadBalancer>(name)? else {
            self.guard_name_free(LoadBalancer::NAME, name);
            let row = LoadBalancer {
                name: name.to_string(),
                protocol: wanted.protocol.clone(),
                selection_fields: wanted.selection_fields.clone(),
                options: wanted.options.clone(),
                external_ids: wanted.external_ids.clone(),
                ..Default::default()
            };
            return Ok(self.insert_named(name, &row));
        };
        if let Some(row) = self.replicated(id)? {
            if row.protocol != wanted.protocol {
                self.set(id, LoadBalancer::PROTOCOL, wanted.protocol.clone());
            }
            if row.selection_fields != wanted.selection_fields {
                self.set(
                    id,
                    LoadBalancer::SELECTION_FIELDS,
                    wanted.selection_fields.clone(),
                );
            }
            self.ensure_keys(id, LoadBalancer::OPTIONS, &row.options, &wanted.options);
            self.ensure_keys(
                id,
                LoadBalancer::EXTERNAL_IDS,
                &row.external_ids,
                &wanted.external_ids,
            );
        }
        Ok(id)
    }

    /// Ensures router port `name` on router `lr` with exactly `networks` and the given
    /// `external_ids` keys. `mac` is used only to create the port: an existing port
    /// keeps its MAC, which neighbours have cached.
    pub fn lrp_ensure(
        &mut self,
        lr: &str,
        name: &str,
        mac: &str,
        networks: &BTreeSet<String>,
        external_ids: &BTreeMap<String, String>,
    ) -> Result<RowId<LogicalRouterPort>, NbError> {
        let existed = self.lookup::<LogicalRouterPort>(name)?.is_some();
        // with may_exist, lrp_add creates the port, or checks its router and returns it
        self.may_exist();
        let id = self.lrp_add(lr, name, mac, networks.iter().cloned(), None)?;
        if !existed {
            if !external_ids.is_empty() {
                self.set_keys(id, LogicalRouterPort::EXTERNAL_IDS, external_ids.clone());
            }
            return Ok(id);
        }
        if let Some(row) = self.replicated(id)? {
            if &row.networks != networks {
                self.set(id, LogicalRouterPort::NETWORKS, networks.clone());
            }
            self.ensure_keys(
                id,
                LogicalRouterPort::EXTERNAL_IDS,
                &row.external_ids,
                external_ids,
            );
        }
        Ok(id)
    }

    /// Ensures switch port `name` on switch `ls` is the switch side of a router patch:
    /// `type=router`, `addresses=["router"]`, `options:router-port=<router_port>`, plus
    /// the given `external_ids` keys.
    pub fn lsp_ensure_router_port(
        &mut self,
        ls: &str,
        name: &str,
        router_port: &str,
        external_ids: &BTreeMap<String, String>,
    ) -> Result<RowId<LogicalSwitchPort>, NbError> {
        let options = BTreeMap::from([("router-port".to_string(), router_port.to_string())]);
        let addresses = BTreeSet::from(["router".to_string()]);
        if self.lookup::<LogicalSwitchPort>(name)?.is_none() {
            let port = LogicalSwitchPort {
                name: name.to_string(),
                r#type: "router".to_string(),
                addresses,
                options,
                external_ids: external_ids.clone(),
                ..Default::default()
            };
            return self.lsp_add_row(ls, port);
        }
        // lsp_add_row checks the owner and returns the existing port
        self.may_exist();
        let id = self.lsp_add_row(
            ls,
            LogicalSwitchPort {
                name: name.to_string(),
                ..Default::default()
            },
        )?;
        if let Some(row) = self.replicated(id)? {
            if row.r#type != "router" {
                self.set(id, LogicalSwitchPort::TYPE, "router".to_string());
            }
            if row.addresses != addresses {
                self.set(id, LogicalSwitchPort::ADDRESSES, addresses);
            }
            self.ensure_keys(id, LogicalSwitchPort::OPTIONS, &row.options, &options);
            self.ensure_keys(
                id,
                LogicalSwitchPort::EXTERNAL_IDS,
                &row.external_ids,
                external_ids,
            );
        }
        Ok(id)
    }

    /// Ensures `NB_Global` holds the `set` options, lacks the `remove` ones, and carries
    /// the given `external_ids` keys and `ipsec` (None: leave it). Creates the row if
    /// the database has none (the schema allows one).
    pub fn nb_global_ensure(
        &mut self,
        set: &BTreeMap<String, String>,
        remove: &[&str],
        external_ids: &BTreeMap<String, String>,
        ipsec: Option<bool>,
    ) -> Result<RowId<NbGlobal>, NbError> {
        let Some(global) = self.store.rows::<NbGlobal>()?.into_iter().next() else {
            return Ok(self.insert(&NbGlobal {
                options: set.clone(),
                external_ids: external_ids.clone(),
                ipsec: ipsec.unwrap_or_default(),
                ..Default::default()
            }));
        };
        let id = global.id;
        self.ensure_keys(id, NbGlobal::OPTIONS, &global.row.options, set);
        let stale: Vec<String> = remove
            .iter()
            .filter(|k| global.row.options.contains_key(**k))
            .map(|k| k.to_string())
            .collect();
        if !stale.is_empty() {
            self.mutate(id, NbGlobal::OPTIONS.delete_keys(stale));
        }
        self.ensure_keys(
            id,
            NbGlobal::EXTERNAL_IDS,
            &global.row.external_ids,
            external_ids,
        );
        if let Some(ipsec) = ipsec.filter(|on| *on != global.row.ipsec) {
            self.set(id, NbGlobal::IPSEC, ipsec);
        }
        Ok(id)
    }
}

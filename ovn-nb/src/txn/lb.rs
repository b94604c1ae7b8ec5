//! Load balancers and their attachment (`lb-*`, `ls-lb-*`, `lr-lb-*`), DHCP
//! options, QoS rules and `NB_Global` options.

use std::collections::{BTreeMap, BTreeSet};

use ovsdb::typed::{RowId, Table};

use super::NbTxn;
use crate::{
    DhcpOptions, LoadBalancer, LoadBalancerProtocol, LoadBalancerSelectionFields, LogicalRouter,
    LogicalSwitch, NbError, NbGlobal, QoS, QoSDirection,
};

/// A load balancer VIP (`lb-add NAME VIP BACKENDS [PROTOCOL]`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LbSpec {
    /// `IP[:PORT]` of the VIP (IPv6 as `[IP]:PORT`).
    pub vip: String,
    /// Comma-separated `IP[:PORT]` backends.
    pub backends: String,
    /// `tcp` (default when None), `udp` or `sctp`.
    pub protocol: Option<LoadBalancerProtocol>,
    /// Fields hashed to pick a backend.
    pub selection_fields: BTreeSet<LoadBalancerSelectionFields>,
    /// `options` (e.g. `reject`, `hairpin_snat_ip`, `skip_snat`).
    pub options: BTreeMap<String, String>,
    /// `external_ids`.
    pub external_ids: BTreeMap<String, String>,
}

impl NbTxn<'_> {
    /// `lb-add`: creates a load balancer; if it exists, `may_exist` adds or
    /// replaces the VIP (as `ovn-nbctl --may-exist lb-add` does).
    pub fn lb_add(&mut self, name: &str, lb: LbSpec) -> Result<RowId<LoadBalancer>, NbError> {
        let may_exist = self.take_may_exist();
        if lb.vip.is_empty() {
            return Err(NbError::InvalidArgument {
                what: "load balancer VIP",
                value: lb.vip,
                why: "must not be empty",
            });
        }
        if let Some(id) = self.lookup::<LoadBalancer>(name)? {
            Self::exists(LoadBalancer::TABLE_NAME, name, may_exist)?;
            self.set_keys(id, LoadBalancer::VIPS, [(lb.vip, lb.backends)]);
            return Ok(id);
        }
        self.guard_name_free(LoadBalancer::NAME, name);
        let row = LoadBalancer {
            name: name.to_string(),
            vips: BTreeMap::from([(lb.vip, lb.backends)]),
            protocol: Some(lb.protocol.unwrap_or(LoadBalancerProtocol::Tcp)),
            selection_fields: lb.selection_fields,
            options: lb.options,
            external_ids: lb.external_ids,
            ..Default::default()
        };
        Ok(self.insert_named(name, &row))
    }

    /// `lb-del NAME [VIP]`: deletes the balancer, or only one VIP.
    pub fn lb_del(&mut self, name: &str, vip: Option<&str>) -> Result<(), NbError> {
        let if_exists = self.take_if_exists();
        let Some(id) = self.lookup::<LoadBalancer>(name)? else {
            return Self::missing(LoadBalancer::TABLE_NAME, name, if_exists);
        };
        match vip {
            Some(vip) => self.mutate(id, LoadBalancer::VIPS.delete_keys([vip.to_string()])),
            None => self.delete_row(id),
        }
        Ok(())
    }

    /// Sets the fields hashed to pick a backend.
    pub fn lb_set_selection_fields(
        &mut self,
        name: &str,
        fields: BTreeSet<LoadBalancerSelectionFields>,
    ) -> Result<(), NbError> {
        let id = self.require::<LoadBalancer>(name)?;
        self.set(id, LoadBalancer::SELECTION_FIELDS, fields);
        Ok(())
    }

    /// Sets `options` keys of a load balancer, keeping the others.
    pub fn lb_set_options(
        &mut self,
        name: &str,
        pairs: impl IntoIterator<Item = (String, String)>,
    ) -> Result<(), NbError> {
        let id = self.require::<LoadBalancer>(name)?;
        self.set_keys(id, LoadBalancer::OPTIONS, pairs);
        Ok(())
    }

    /// `ls-lb-add SWITCH LB` (idempotent: set insert).
    pub fn ls_lb_add(&mut self, ls: &str, lb: &str) -> Result<(), NbError> {
        let (ls, lb) = (
            self.require::<LogicalSwitch>(ls)?,
            self.require::<LoadBalancer>(lb)?,
        );
        self.mutate(ls, LogicalSwitch::LOAD_BALANCER.insert([lb]));
        Ok(())
    }

    /// `ls-lb-del SWITCH LB`.
    pub fn ls_lb_del(&mut self, ls: &str, lb: &str) -> Result<(), NbError> {
        let (ls, lb) = (
            self.require::<LogicalSwitch>(ls)?,
            self.require::<LoadBalancer>(lb)?,
        );
        self.mutate(ls, LogicalSwitch::LOAD_BALANCER.delete([lb]));
        Ok(())
    }

    /// `lr-lb-add ROUTER LB` (idempotent: set insert).
    pub fn lr_lb_add(&mut self, lr: &str, lb: &str) -> Result<(), NbError> {
        let (lr, lb) = (
            self.require::<LogicalRouter>(lr)?,
            self.require::<LoadBalancer>(lb)?,
        );
        self.mutate(lr, LogicalRouter::LOAD_BALANCER.insert([lb]));
        Ok(())
    }

    /// `lr-lb-del ROUTER LB`.
    pub fn lr_lb_del(&mut self, lr: &str, lb: &str) -> Result<(), NbError> {
        let (lr, lb) = (
            self.require::<LogicalRouter>(lr)?,
            self.require::<LoadBalancer>(lb)?,
        );
        self.mutate(lr, LogicalRouter::LOAD_BALANCER.delete([lb]));
        Ok(())
    }

    /// `dhcp-options-create CIDR [KEY=VALUE...]` (the pairs go to `external_ids`).
    /// With `may_exist`, an existing row with the same cidr and external_ids is reused.
    pub fn dhcp_options_create(
        &mut self,
        cidr: &str,
        external_ids: BTreeMap<String, String>,
    ) -> Result<RowId<DhcpOptions>, NbError> {
        let may_exist = self.take_may_exist();
        if may_exist {
            let same = self
                .store
                .filter::<DhcpOptions>(|d| d.cidr == cidr && d.external_ids == external_ids)?;
            if let Some(found) = same
                .into_iter()
                .find(|d| !self.deleted.contains(&d.id.uuid()))
            {
                return Ok(found.id);
            }
        }
        Ok(self.insert(&DhcpOptions {
            cidr: cidr.to_string(),
            external_ids,
            ..Default::default()
        }))
    }

    /// `dhcp-options-set-options UUID KEY=VALUE...`: replaces the options.
    pub fn dhcp_options_set_options(
        &mut self,
        id: RowId<DhcpOptions>,
        options: BTreeMap<String, String>,
    ) -> &mut Self {
        self.set(id, DhcpOptions::OPTIONS, options)
    }

    /// `dhcp-options-del UUID`.
    pub fn dhcp_options_del(&mut self, id: RowId<DhcpOptions>) {
        self.delete_row(id);
    }

    /// `qos-add SWITCH DIRECTION PRIORITY MATCH [rate=R [burst=B]] [dscp=D]`.
    pub fn qos_add(
        &mut self,
        ls: &str,
        direction: QoSDirection,
        priority: i64,
        r#match: &str,
        bandwidth: BTreeMap<crate::QoSBandwidthKey, i64>,
        dscp: Option<i64>,
    ) -> Result<RowId<QoS>, NbError> {
        let ls_id = self.require::<LogicalSwitch>(ls)?;
        let action = dscp
            .map(|d| (crate::QoSActionKey::Dscp, d))
            .into_iter()
            .collect();
        let row = QoS {
            direction,
            priority,
            r#match: r#match.to_string(),
            bandwidth,
            action,
            ..Default::default()
        };
        let id = self.insert(&row);
        self.mutate(ls_id, LogicalSwitch::QOS_RULES.insert([id]));
        Ok(id)
    }

    /// `qos-del SWITCH`: removes every QoS rule of the switch; returns how many.
    pub fn qos_del(&mut self, ls: &str) -> Result<usize, NbError> {
        let ls_id = self.require::<LogicalSwitch>(ls)?;
        let rules = self.row(ls_id)?.map(|r| r.qos_rules).unwrap_or_default();
        let n = rules.len();
        if n > 0 {
            self.mutate(ls_id, LogicalSwitch::QOS_RULES.delete(rules));
        }
        Ok(n)
    }

    /// Sets `NB_Global` options keys (creating the row if the database has none).
    pub fn nb_global_set_options(
        &mut self,
        pairs: impl IntoIterator<Item = (String, String)>,
    ) -> Result<(), NbError> {
        match self.store.rows::<NbGlobal>()?.first() {
            Some(global) => {
                self.set_keys(global.id, NbGlobal::OPTIONS, pairs);
            }
            None => {
                self.insert(&NbGlobal {
                    options: pairs.into_iter().collect(),
                    ..Default::default()
                });
            }
        }
        Ok(())
    }
}

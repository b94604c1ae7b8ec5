//! Logical routers, their ports, static routes, policies, NAT and gateway
//! chassis (`lr-*`, `lrp-*`, `lr-route-*`, `lr-policy-*`, `lr-nat-*`).

use std::collections::{BTreeMap, BTreeSet};

use ovsdb::typed::{RowId, Table};

use super::NbTxn;
use crate::{
    GatewayChassis, LogicalRouter, LogicalRouterPolicy, LogicalRouterPolicyAction,
    LogicalRouterPort, LogicalRouterStaticRoute, LogicalRouterStaticRoutePolicy, Nat, NatType,
    NbError,
};

/// A static route (`lr-route-add [--policy=P] [--ecmp] [--route-table=T] ROUTER PREFIX NEXTHOP [PORT]`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RouteSpec {
    /// Destination (or source, with `src-ip` policy) prefix, e.g. `10.0.0.0/24`.
    pub ip_prefix: String,
    /// Next hop address (or `discard`).
    pub nexthop: String,
    /// Output router port.
    pub output_port: Option<String>,
    /// `dst-ip` (default when None) or `src-ip`.
    pub policy: Option<LogicalRouterStaticRoutePolicy>,
    /// Route table name (`""` is the main table).
    pub route_table: String,
    /// Add another next hop for the same prefix instead of failing (ECMP).
    pub ecmp: bool,
    /// `external_ids`.
    pub external_ids: BTreeMap<String, String>,
}

/// A routing policy (`lr-policy-add ROUTER PRIORITY MATCH ACTION [NEXTHOP...]`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PolicySpec {
    /// 0..=32767.
    pub priority: i64,
    /// Logical flow match.
    pub r#match: String,
    /// `allow`, `drop` or `reroute`.
    pub action: LogicalRouterPolicyAction,
    /// Next hops for `reroute`.
    pub nexthops: BTreeSet<String>,
    /// `options` (e.g. `pkt_mark`).
    pub options: BTreeMap<String, String>,
    /// `external_ids`.
    pub external_ids: BTreeMap<String, String>,
}

/// A NAT rule (`lr-nat-add ROUTER TYPE EXTERNAL_IP LOGICAL_IP [LOGICAL_PORT EXTERNAL_MAC]`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NatSpec {
    /// `snat`, `dnat` or `dnat_and_snat`.
    pub nat_type: NatType,
    /// The external address.
    pub external_ip: String,
    /// The internal address or (snat) network.
    pub logical_ip: String,
    /// For distributed `dnat_and_snat`: the logical port holding `logical_ip`.
    pub logical_port: Option<String>,
    /// For distributed `dnat_and_snat`: the MAC to answer with.
    pub external_mac: Option<String>,
    /// `options` (e.g. `stateless`).
    pub options: BTreeMap<String, String>,
    /// `external_ids`.
    pub external_ids: BTreeMap<String, String>,
}

impl NbTxn<'_> {
    /// `lr-add NAME`.
    pub fn lr_add(&mut self, name: &str) -> Result<RowId<LogicalRouter>, NbError> {
        let may_exist = self.take_may_exist();
        if let Some(id) = self.lookup::<LogicalRouter>(name)? {
            Self::exists(LogicalRouter::TABLE_NAME, name, may_exist)?;
            return Ok(id);
        }
        self.guard_name_free(LogicalRouter::NAME, name);
        Ok(self.insert_named(
            name,
            &LogicalRouter {
                name: name.to_string(),
                ..Default::default()
            },
        ))
    }

    /// `lr-del NAME`.
    pub fn lr_del(&mut self, name: &str) -> Result<(), NbError> {
        let if_exists = self.take_if_exists();
        match self.lookup::<LogicalRouter>(name)? {
            Some(id) => {
                self.delete_row(id);
                Ok(())
            }
            None => Self::missing(LogicalRouter::TABLE_NAME, name, if_exists),
        }
    }

    fn router_of(&self, lrp: RowId<LogicalRouterPort>) -> Option<RowId<LogicalRouter>> {
        self.store
            .ids_referencing::<LogicalRouter>("ports", lrp.uuid())
            .into_iter()
            .find(|id| !self.deleted.contains(&id.uuid()))
    }

    /// `lrp-add ROUTER PORT MAC NETWORK... [peer=PEER]`.
    pub fn lrp_add<S: Into<String>>(
        &mut self,
        lr: &str,
        name: &str,
        mac: &str,
        networks: impl IntoIterator<Item = S>,
        peer: Option<&str>,
    ) -> Result<RowId<LogicalRouterPort>, NbError> {
        let may_exist = self.take_may_exist();
        let lr_id = self.require::<LogicalRouter>(lr)?;
        let networks: BTreeSet<String> = networks.into_iter().map(Into::into).collect();
        if networks.is_empty() {
            return Err(NbError::InvalidArgument {
                what: "networks",
                value: String::new(),
                why: "at least one network is required",
            });
        }
        if let Some(id) = self.lookup::<LogicalRouterPort>(name)? {
            let owner = self.router_of(id);
            if owner.is_some() && owner != Some(lr_id) {
                let owner_name = owner
                    .and_then(|o| self.row(o).ok().flatten())
                    .map(|r| r.name)
                    .unwrap_or_default();
                return Err(NbError::WrongOwner {
                    kind: "logical router port",
                    port: name.to_string(),
                    owner: owner_name,
                    wanted: lr.to_string(),
                });
            }
            Self::exists(LogicalRouterPort::TABLE_NAME, name, may_exist)?;
            return Ok(id);
        }
        let port = LogicalRouterPort {
            name: name.to_string(),
            mac: mac.to_string(),
            networks,
            peer: peer.map(str::to_string),
            ..Default::default()
        };
        let id = self.insert_named(name, &port);
        self.mutate(lr_id, LogicalRouter::PORTS.insert([id]));
        Ok(id)
    }

    /// `lrp-del PORT`.
    pub fn lrp_del(&mut self, name: &str) -> Result<(), NbError> {
        let if_exists = self.take_if_exists();
        let Some(id) = self.lookup::<LogicalRouterPort>(name)? else {
            return Self::missing(LogicalRouterPort::TABLE_NAME, name, if_exists);
        };
        if let Some(lr) = self.router_of(id) {
            self.mutate(lr, LogicalRouter::PORTS.delete([id]));
        }
        self.deleted.insert(id.uuid());
        Ok(())
    }

    /// `lrp-set-gateway-chassis PORT CHASSIS [PRIORITY]`: creates or updates the
    /// `PORT-CHASSIS` Gateway_Chassis row.
    pub fn lrp_set_gateway_chassis(
        &mut self,
        lrp: &str,
        chassis: &str,
        priority: i64,
    ) -> Result<RowId<GatewayChassis>, NbError> {
        let port = self.require::<LogicalRouterPort>(lrp)?;
        let name = format!("{lrp}-{chassis}");
        if let Some(gc) = self.lookup::<GatewayChassis>(&name)? {
            self.set(gc, GatewayChassis::PRIORITY, priority);
            return Ok(gc);
        }
        let row = GatewayChassis {
            name: name.clone(),
            chassis_name: chassis.to_string(),
            priority,
            ..Default::default()
        };
        let gc = self.insert_named(&name, &row);
        self.mutate(port, LogicalRouterPort::GATEWAY_CHASSIS.insert([gc]));
        Ok(gc)
    }

    fn routes_of(
        &self,
        lr: RowId<LogicalRouter>,
    ) -> Result<Vec<ovsdb::typed::Stored<LogicalRouterStaticRoute>>, NbError> {
        let ids = self.row(lr)?.map(|r| r.static_routes).unwrap_or_default();
        self.rows_of(
            ids.into_iter()
                .filter(|id| !self.deleted.contains(&id.uuid())),
        )
    }

    /// `lr-route-add`: adds a static route. Without `ecmp`, a route for the same
    /// prefix, policy and route table is a conflict (`may_exist` updates its next
    /// hop instead); with `ecmp`, only the same next hop is.
    pub fn lr_route_add(
        &mut self,
        lr: &str,
        route: RouteSpec,
    ) -> Result<RowId<LogicalRouterStaticRoute>, NbError> {
        let may_exist = self.take_may_exist();
        let lr_id = self.require::<LogicalRouter>(lr)?;
        let policy = route
            .policy
            .clone()
            .unwrap_or(LogicalRouterStaticRoutePolicy::DstIp);
        let same_key = |r: &LogicalRouterStaticRoute| {
            r.ip_prefix == route.ip_prefix
                && r.route_table == route.route_table
                && r.policy
                    .clone()
                    .unwrap_or(LogicalRouterStaticRoutePolicy::DstIp)
                    == policy
        };
        for existing in self.routes_of(lr_id)? {
            if !same_key(&existing.row) || (route.ecmp && existing.nexthop != route.nexthop) {
                continue;
            }
            let what = format!("{} via {}", route.ip_prefix, existing.nexthop);
            Self::exists(LogicalRouterStaticRoute::TABLE_NAME, &what, may_exist)?;
            if existing.nexthop != route.nexthop || existing.output_port != route.output_port {
                self.set(
                    existing.id,
                    LogicalRouterStaticRoute::NEXTHOP,
                    route.nexthop.clone(),
                );
                self.set(
                    existing.id,
                    LogicalRouterStaticRoute::OUTPUT_PORT,
                    route.output_port.clone(),
                );
            }
            return Ok(existing.id);
        }
        let row = LogicalRouterStaticRoute {
            ip_prefix: route.ip_prefix,
            nexthop: route.nexthop,
            output_port: route.output_port,
            policy: route.policy,
            route_table: route.route_table,
            external_ids: route.external_ids,
            ..Default::default()
        };
        let id = self.insert(&row);
        self.mutate(lr_id, LogicalRouter::STATIC_ROUTES.insert([id]));
        Ok(id)
    }

    /// `lr-route-del ROUTER [PREFIX [NEXTHOP]]` in `route_table`: removes the
    /// matching routes; returns how many.
    pub fn lr_route_del(
        &mut self,
        lr: &str,
        prefix: Option<&str>,
        nexthop: Option<&str>,
        route_table: &str,
    ) -> Result<usize, NbError> {
        let if_exists = self.take_if_exists();
        let lr_id = self.require::<LogicalRouter>(lr)?;
        let doomed: Vec<_> = self
            .routes_of(lr_id)?
            .into_iter()
            .filter(|r| r.route_table == route_table)
            .filter(|r| prefix.is_none_or(|p| r.ip_prefix == p))
            .filter(|r| nexthop.is_none_or(|n| r.nexthop == n))
            .map(|r| r.id)
            .collect();
        if doomed.is_empty() && prefix.is_some() && !if_exists {
            return Err(NbError::NotFound {
                table: LogicalRouterStaticRoute::TABLE_NAME,
                name: prefix.unwrap_or_default().to_string(),
            });
        }
        if !doomed.is_empty() {
            self.deleted.extend(doomed.iter().map(|id| id.uuid()));
            self.mutate(
                lr_id,
                LogicalRouter::STATIC_ROUTES.delete(doomed.iter().copied()),
            );
        }
        Ok(doomed.len())
    }

    /// `lr-policy-add`: a policy with the same priority and match is a conflict
    /// (`may_exist`: no-op).
    pub fn lr_policy_add(
        &mut self,
        lr: &str,
        policy: PolicySpec,
    ) -> Result<RowId<LogicalRouterPolicy>, NbError> {
        let may_exist = self.take_may_exist();
        let lr_id = self.require::<LogicalRouter>(lr)?;
        let ids = self.row(lr_id)?.map(|r| r.policies).unwrap_or_default();
        for existing in self.rows_of(ids)? {
            if existing.priority == policy.priority && existing.r#match == policy.r#match {
                let what = format!("{} {}", policy.priority, policy.r#match);
                Self::exists(LogicalRouterPolicy::TABLE_NAME, &what, may_exist)?;
                return Ok(existing.id);
            }
        }
        let row = LogicalRouterPolicy {
            priority: policy.priority,
            r#match: policy.r#match,
            action: policy.action,
            nexthops: policy.nexthops,
            options: policy.options,
            external_ids: policy.external_ids,
            ..Default::default()
        };
        let id = self.insert(&row);
        self.mutate(lr_id, LogicalRouter::POLICIES.insert([id]));
        Ok(id)
    }

    /// `lr-policy-del ROUTER [PRIORITY [MATCH]]`: returns how many were removed.
    pub fn lr_policy_del(
        &mut self,
        lr: &str,
        priority: Option<i64>,
        r#match: Option<&str>,
    ) -> Result<usize, NbError> {
        let lr_id = self.require::<LogicalRouter>(lr)?;
        let ids = self.row(lr_id)?.map(|r| r.policies).unwrap_or_default();
        let doomed: Vec<_> = self
            .rows_of(ids)?
            .into_iter()
            .filter(|p| priority.is_none_or(|x| p.priority == x))
            .filter(|p| r#match.is_none_or(|m| p.r#match == m))
            .map(|p| p.id)
            .collect();
        if !doomed.is_empty() {
            self.mutate(
                lr_id,
                LogicalRouter::POLICIES.delete(doomed.iter().copied()),
            );
        }
        Ok(doomed.len())
    }

    /// `lr-nat-add`: a rule with the same type and (external ip for dnat*,
    /// logical ip for snat) is a conflict (`may_exist`: updates it).
    pub fn lr_nat_add(&mut self, lr: &str, nat: NatSpec) -> Result<RowId<Nat>, NbError> {
        let may_exist = self.take_may_exist();
        let lr_id = self.require::<LogicalRouter>(lr)?;
        if nat.logical_port.is_some() != nat.external_mac.is_some() {
            return Err(NbError::InvalidArgument {
                what: "NAT logical_port/external_mac",
                value: nat.external_ip.clone(),
                why: "both or neither must be given",
            });
        }
        if nat.logical_port.is_some() && nat.nat_type != NatType::DnatAndSnat {
            return Err(NbError::InvalidArgument {
                what: "NAT type",
                value: nat.nat_type.to_string(),
                why: "logical_port needs dnat_and_snat",
            });
        }
        let ids = self.row(lr_id)?.map(|r| r.nat).unwrap_or_default();
        let key = |n: &Nat| {
            if nat.nat_type == NatType::Snat {
                n.logical_ip.clone()
            } else {
                n.external_ip.clone()
            }
        };
        let wanted = if nat.nat_type == NatType::Snat {
            nat.logical_ip.clone()
        } else {
            nat.external_ip.clone()
        };
        for existing in self.rows_of(ids)? {
            if existing.r#type == nat.nat_type && key(&existing.row) == wanted {
                Self::exists(
                    Nat::TABLE_NAME,
                    &format!("{} {wanted}", nat.nat_type),
                    may_exist,
                )?;
                let mut upd = ovsdb::typed::update(Nat::ROW_UUID.eq(existing.id));
                upd = upd
                    .set(Nat::EXTERNAL_IP.to(nat.external_ip.clone()))
                    .set(Nat::LOGICAL_IP.to(nat.logical_ip.clone()));
                upd = upd
                    .set(Nat::LOGICAL_PORT.to(nat.logical_port.clone()))
                    .set(Nat::EXTERNAL_MAC.to(nat.external_mac.clone()));
                self.guard_exists(existing.id);
                self.push(upd);
                return Ok(existing.id);
            }
        }
        let row = Nat {
            r#type: nat.nat_type,
            external_ip: nat.external_ip,
            logical_ip: nat.logical_ip,
            logical_port: nat.logical_port,
            external_mac: nat.external_mac,
            options: nat.options,
            external_ids: nat.external_ids,
            ..Default::default()
        };
        let id = self.insert(&row);
        self.mutate(lr_id, LogicalRouter::NAT.insert([id]));
        Ok(id)
    }

    /// `lr-nat-del ROUTER [TYPE [IP]]`: returns how many were removed.
    pub fn lr_nat_del(
        &mut self,
        lr: &str,
        nat_type: Option<NatType>,
        ip: Option<&str>,
    ) -> Result<usize, NbError> {
        let lr_id = self.require::<LogicalRouter>(lr)?;
        let ids = self.row(lr_id)?.map(|r| r.nat).unwrap_or_default();
        let doomed: Vec<_> = self
            .rows_of(ids)?
            .into_iter()
            .filter(|n| nat_type.as_ref().is_none_or(|t| &n.r#type == t))
            .filter(|n| {
                ip.is_none_or(|ip| {
                    if n.r#type == NatType::Snat {
                        n.logical_ip == ip
                    } else {
                        n.external_ip == ip
                    }
                })
            })
            .map(|n| n.id)
            .collect();
        if !doomed.is_empty() {
            self.mutate(lr_id, LogicalRouter::NAT.delete(doomed.iter().copied()));
        }
        Ok(doomed.len())
    }
}

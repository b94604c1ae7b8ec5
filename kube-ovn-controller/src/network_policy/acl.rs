//! A policy's ACLs, rendered from the policy alone (plus the container port numbers
//! its named ports resolve to): which pods and peers they concern is left to the
//! port group and address sets they name, so pods and labels coming and going never
//! rewrite an ACL.
//!
//! Per governed direction, on the policy's port group (`outport == @pg` for ingress,
//! to-lport; `inport == @pg` for egress, from-lport with `apply-after-lb=true`):
//! * a default drop at 2000, `... && ip`;
//! * per rule and family, at 2001 `allow-related`: `... && ip && ip4.src == $<allow
//!   set>` for the selector peers (the set holds `0.0.0.0/0` when the rule has no
//!   peers), and per ipBlock peer `... && ip && ip4.src == <cidr> && ip4.src !=
//!   {<except>}` inline, so one ipBlock's `except` never removes what another peer
//!   allows; each once per port: `tcp`, `tcp.dst == N`, `tcp.dst >= N && tcp.dst <=
//!   M`, or a named port's numbers `tcp.dst == {N, ..}`;
//! * for a direction governed without rules (a default deny), per family at 2001
//!   `allow-related`: `... && ip && ip4.src == $<pg>.<direction>.allow.IPv4.all`, an
//!   always empty set, so it allows nothing: as Kube-OVN, so that the switch is
//!   stateful and the replies of the selected pods' own connections (established in
//!   conntrack) pass the drop; without an `allow-related` ACL OVN sends nothing
//!   through conntrack and a default deny ingress also cut the pods' outgoing
//!   connections off.

use std::collections::{BTreeMap, BTreeSet};

use ovn_nb::{AclAction, AclDirection, AclSpec};

use super::names::{self, Direction, Family, ALLOW_PRIORITY, DEFAULT_DROP_PRIORITY, PARENT_KEY};
use super::selection::Snapshot;
use super::validate::{Peer, PortMatch, Protocol, Rule, RulePort, ValidPolicy};
use crate::bootstrap::VENDOR;

/// What the rendering noticed that the API server accepts but that matches nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnresolvedPort {
    /// The JSON path of the port, e.g. `spec.ingress[0].ports[1]`.
    pub field: String,
    /// The port name no destination pod declares.
    pub name: String,
}

/// A policy's wanted ACLs and the named ports that resolved to nothing.
#[derive(Debug, Clone, Default)]
pub struct RenderedAcls {
    /// The ACLs, keyed (and so deduplicated) by direction and match.
    pub acls: BTreeMap<(String, String), AclSpec>,
    /// Named ports no destination pod declares.
    pub unresolved: Vec<UnresolvedPort>,
}

fn ovn_direction(direction: Direction) -> AclDirection {
    match direction {
        Direction::Ingress => AclDirection::ToLport,
        Direction::Egress => AclDirection::FromLport,
    }
}

/// `outport == @pg` (ingress) or `inport == @pg` (egress).
fn port_side(direction: Direction, pg: &str) -> String {
    match direction {
        Direction::Ingress => format!("outport == @{pg}"),
        Direction::Egress => format!("inport == @{pg}"),
    }
}

/// `src` for ingress (the peer sends), `dst` for egress (the peer receives).
fn peer_side(direction: Direction) -> &'static str {
    match direction {
        Direction::Ingress => "src",
        Direction::Egress => "dst",
    }
}

fn acl(
    direction: Direction,
    pg: &str,
    priority: i64,
    r#match: String,
    action: AclAction,
    name: String,
) -> AclSpec {
    let mut options = BTreeMap::new();
    if direction == Direction::Egress {
        options.insert("apply-after-lb".to_string(), "true".to_string());
    }
    AclSpec {
        direction: ovn_direction(direction),
        priority,
        r#match,
        action,
        name: Some(name),
        options,
        external_ids: BTreeMap::from([
            (PARENT_KEY.to_string(), pg.to_string()),
            ("vendor".to_string(), VENDOR.to_string()),
        ]),
        ..Default::default()
    }
}

/// The port numbers `name`/`protocol` resolves to on the given pods.
fn resolve<'a>(
    pods: impl Iterator<Item = &'a super::selection::PodView>,
    name: &str,
    protocol: Protocol,
) -> BTreeSet<u16> {
    pods.flat_map(|p| p.named_ports.iter())
        .filter(|(n, proto, _)| n == name && *proto == protocol)
        .map(|(_, _, num)| *num)
        .collect()
}

/// The port clause of one rule port, None when a named port resolves to nothing.
fn port_clause(port: &RulePort, numbers: &BTreeSet<u16>) -> Option<String> {
    let proto = port.protocol.field();
    Some(match &port.port {
        PortMatch::Any => proto.to_string(),
        PortMatch::Range(a, b) if a == b => format!("{proto}.dst == {a}"),
        PortMatch::Range(a, b) => format!("{proto}.dst >= {a} && {proto}.dst <= {b}"),
        PortMatch::Named(_) if numbers.is_empty() => return None,
        PortMatch::Named(_) if numbers.len() == 1 => format!("{proto}.dst == {}", numbers.first()?),
        PortMatch::Named(_) => {
            let list: Vec<String> = numbers.iter().map(u16::to_string).collect();
            format!("{proto}.dst == {{{}}}", list.join(", "))
        }
    })
}

struct RuleCtx<'a> {
    policy: &'a ValidPolicy,
    snapshot: &'a Snapshot,
    pg: &'a str,
    direction: Direction,
    index: usize,
}

impl RuleCtx<'_> {
    /// The port clauses of the rule (`[None]`: any port), recording unresolved names.
    fn port_clauses(&self, rule: &Rule, out: &mut RenderedAcls) -> Vec<Option<String>> {
        if rule.ports.is_empty() {
            return vec![None];
        }
        let mut clauses = Vec::new();
        for (i, port) in rule.ports.iter().enumerate() {
            let numbers = match &port.port {
                PortMatch::Named(name) => self.named_port_numbers(rule, name, port.protocol),
                _ => BTreeSet::new(),
            };
            match port_clause(port, &numbers) {
                Some(c) => clauses.push(Some(c)),
                None => {
                    if let PortMatch::Named(name) = &port.port {
                        out.unresolved.push(UnresolvedPort {
                            field: format!("spec.{}[{}].ports[{i}]", self.direction, self.index),
                            name: name.clone(),
                        });
                    }
                }
            }
        }
        clauses
    }

    /// A named port is resolved on the destination: the selected pods for ingress,
    /// the rule's peer pods (every pod when it has no selector peer) for egress.
    fn named_port_numbers(&self, rule: &Rule, name: &str, protocol: Protocol) -> BTreeSet<u16> {
        let snap = self.snapshot;
        match self.direction {
            Direction::Ingress => resolve(snap.selected(self.policy), name, protocol),
            Direction::Egress => {
                let selectors: Vec<&Peer> = rule
                    .peers
                    .iter()
                    .filter(|p| matches!(p, Peer::Pods { .. }))
                    .collect();
                if selectors.is_empty() {
                    resolve(snap.pods.iter(), name, protocol)
                } else {
                    let pods = selectors
                        .into_iter()
                        .flat_map(|p| snap.peer_pods(&self.policy.namespace, p));
                    resolve(pods, name, protocol)
                }
            }
        }
    }

    /// The peer clauses of the rule for one family.
    fn peer_clauses(&self, rule: &Rule, family: Family) -> Vec<String> {
        let field = format!("{}.{}", family.field(), peer_side(self.direction));
        let mut clauses = Vec::new();
        let has_selector = rule.peers.iter().any(|p| matches!(p, Peer::Pods { .. }));
        if rule.peers.is_empty() || has_selector {
            let set = names::address_set(self.pg, self.direction, false, family, self.index);
            clauses.push(format!("{field} == ${set}"));
        }
        for peer in &rule.peers {
            let Peer::Block { cidr, except } = peer else {
                continue;
            };
            if Family::of(&cidr.addr()) != family {
                continue;
            }
            let mut clause = format!("{field} == {cidr}");
            if !except.is_empty() {
                let list: Vec<String> = except.iter().map(|e| e.trunc().to_string()).collect();
                clause.push_str(&format!(" && {field} != {{{}}}", list.join(", ")));
            }
            clauses.push(clause);
        }
        clauses
    }
}

/// The ACLs a policy wants on its port group, for the address families in use.
pub fn render(policy: &ValidPolicy, snapshot: &Snapshot, families: &[Family]) -> RenderedAcls {
    let (ns, name) = (policy.namespace.as_str(), policy.name.as_str());
    let pg = names::port_group(ns, name);
    let mut out = RenderedAcls::default();
    for direction in [Direction::Ingress, Direction::Egress] {
        let Some(rules) = policy.rules(direction) else {
            continue;
        };
        let side = port_side(direction, &pg);
        let drop = acl(
            direction,
            &pg,
            DEFAULT_DROP_PRIORITY,
            format!("{side} && ip"),
            AclAction::Drop,
            names::drop_acl_name(ns, name),
        );
        out.acls
            .insert((drop.direction.to_string(), drop.r#match.clone()), drop);
        if rules.is_empty() {
            for &family in families {
                let field = format!("{}.{}", family.field(), peer_side(direction));
                let set = names::no_rules_address_set(&pg, direction, false, family);
                let a = acl(
                    direction,
                    &pg,
                    ALLOW_PRIORITY,
                    format!("{side} && ip && {field} == ${set}"),
                    AclAction::AllowRelated,
                    names::no_rules_acl_name(ns, name, direction, family),
                );
                out.acls
                    .insert((a.direction.to_string(), a.r#match.clone()), a);
            }
        }
        for (index, rule) in rules.iter().enumerate() {
            let ctx = RuleCtx {
                policy,
                snapshot,
                pg: &pg,
                direction,
                index,
            };
            let ports = ctx.port_clauses(rule, &mut out);
            for &family in families {
                let acl_name = names::allow_acl_name(ns, name, direction, family, index);
                for peer in ctx.peer_clauses(rule, family) {
                    for port in &ports {
                        let mut m = format!("{side} && ip && {peer}");
                        if let Some(port) = port {
                            m.push_str(&format!(" && {port}"));
                        }
                        let a = acl(
                            direction,
                            &pg,
                            ALLOW_PRIORITY,
                            m,
                            AclAction::AllowRelated,
                            acl_name.clone(),
                        );
                        out.acls
                            .insert((a.direction.to_string(), a.r#match.clone()), a);
                    }
                }
            }
        }
    }
    out
}

//! Kube-OVN's names for a NetworkPolicy's rows (`pkg/controller/network_policy.go`,
//! `pkg/ovs/ovn-nb-acl.go`): the port group `<np>.<ns>`, the address sets
//! `<pg>.<direction>.<allow|except>.<IPv4|IPv6>.<rule>` and the ACL names
//! `np/<np>.<ns>/<direction>/<IPv4|IPv6>/<rule>`, cut to OVN's 63 characters.

use kube_ovn_api::NamespacedName;
use std::fmt;

/// Priority of the per-policy default drop (`util.IngressDefaultDrop`, `EgressDefaultDrop`).
pub const DEFAULT_DROP_PRIORITY: i64 = 2000;
/// Priority of an allow rule (`util.IngressAllowPriority`, `EgressAllowPriority`).
pub const ALLOW_PRIORITY: i64 = 2001;
/// Priority of the node (kubelet probe) access allow (`util.NodeAllowPriority`).
pub const NODE_ALLOW_PRIORITY: i64 = 3000;
/// `external_ids` key naming the owning policy (`np=<ns>/<name>[/<direction>]`).
pub const NP_KEY: &str = "np";
/// `external_ids` key of an ACL naming its port group.
pub const PARENT_KEY: &str = "parent";
/// OVN's limit on an ACL name.
const ACL_NAME_MAX: usize = 63;

/// The traffic direction a rule governs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Direction {
    /// Traffic into the selected pods (`to-lport`, matched on `outport`).
    Ingress,
    /// Traffic out of the selected pods (`from-lport`, matched on `inport`).
    Egress,
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Direction::Ingress => "ingress",
            Direction::Egress => "egress",
        })
    }
}

/// An address family, spelled as Kube-OVN spells it in names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Family {
    /// `IPv4`, matched with `ip4.src`/`ip4.dst`.
    V4,
    /// `IPv6`, matched with `ip6.src`/`ip6.dst`.
    V6,
}

impl Family {
    /// `IPv4` or `IPv6`.
    pub fn name(self) -> &'static str {
        match self {
            Family::V4 => "IPv4",
            Family::V6 => "IPv6",
        }
    }

    /// `ip4` or `ip6`, the match field prefix.
    pub fn field(self) -> &'static str {
        match self {
            Family::V4 => "ip4",
            Family::V6 => "ip6",
        }
    }

    /// The family of an address.
    pub fn of(ip: &std::net::IpAddr) -> Family {
        if ip.is_ipv4() {
            Family::V4
        } else {
            Family::V6
        }
    }
}

/// Replaces what OVN's match grammar does not allow in a port group or address set
/// name (`-` and `/`) with `.`, and prefixes `np` when the name does not begin with
/// a letter (Kube-OVN's `strings.ReplaceAll(name, "-", ".")`).
fn ovn_safe(name: &str) -> String {
    let dotted: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
                c
            } else {
                '.'
            }
        })
        .collect();
    if dotted.starts_with(|c: char| c.is_ascii_alphabetic()) {
        dotted
    } else {
        format!("np{dotted}")
    }
}

/// The port group of the pods a policy selects: `<np>.<ns>`.
pub fn port_group(ns: &str, name: &str) -> String {
    ovn_safe(&format!("{name}.{ns}"))
}

/// A rule's address set: `<pg>.<direction>.<allow|except>.<IPv4|IPv6>.<rule>`.
pub fn address_set(
    pg: &str,
    direction: Direction,
    except: bool,
    family: Family,
    rule: usize,
) -> String {
    let kind = if except { "except" } else { "allow" };
    format!("{pg}.{direction}.{kind}.{}.{rule}", family.name())
}

/// The address set of a governed direction without rules (Kube-OVN's `.all` sets):
/// `<pg>.<direction>.<allow|except>.<IPv4|IPv6>.all`, always empty.
pub fn no_rules_address_set(
    pg: &str,
    direction: Direction,
    except: bool,
    family: Family,
) -> String {
    let kind = if except { "except" } else { "allow" };
    format!("{pg}.{direction}.{kind}.{}.all", family.name())
}

/// A NetworkPolicy's key. On the wire (the `np` external ids) it is `<ns>/<name>`,
/// written by its `Display` and read back by [`policy_of_id`]; inside the reconciler it
/// stays typed.
pub type PolicyKey = NamespacedName;

/// Reads a port group's `np` external id, `<ns>/<name>` (the name is what follows the
/// first `/`, as the ids Kube-OVN wrote have it); None without a `/`.
pub fn policy_of_id(id: &str) -> Option<PolicyKey> {
    let (namespace, name) = id.split_once('/')?;
    Some(PolicyKey::new(namespace, name))
}

/// Reads an address set's `np` external id, `<ns>/<name>/<direction>`: the policy it
/// names; None unless the id has exactly three parts.
pub fn policy_of_address_set_id(id: &str) -> Option<PolicyKey> {
    let (policy, _direction) = id.rsplit_once('/')?;
    let key = policy_of_id(policy)?;
    (!key.name.contains('/')).then_some(key)
}

/// The `np` external id of a policy's address sets of `direction`:
/// `<ns>/<name>/<direction>`.
pub fn address_set_id(policy: &PolicyKey, direction: Direction) -> String {
    format!("{policy}/{direction}")
}

/// An ACL name, cut to 63 characters as Kube-OVN's `setACLName` does.
pub fn acl_name(name: String) -> String {
    if name.len() > ACL_NAME_MAX {
        let mut cut = ACL_NAME_MAX - 3;
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}...", &name[..cut])
    } else {
        name
    }
}

/// The name of a policy's allow ACL: `np/<np>.<ns>/<direction>/<IPv4|IPv6>/<rule>`.
pub fn allow_acl_name(
    ns: &str,
    name: &str,
    direction: Direction,
    family: Family,
    rule: usize,
) -> String {
    acl_name(format!(
        "np/{name}.{ns}/{direction}/{}/{rule}",
        family.name()
    ))
}

/// The name of the allow ACL of a governed direction without rules:
/// `np/<np>.<ns>/<direction>/<IPv4|IPv6>/all`.
pub fn no_rules_acl_name(ns: &str, name: &str, direction: Direction, family: Family) -> String {
    acl_name(format!("np/{name}.{ns}/{direction}/{}/all", family.name()))
}

/// The name of a policy's default drop ACL: `<ns>/<name>`.
pub fn drop_acl_name(ns: &str, name: &str) -> String {
    acl_name(PolicyKey::new(ns, name).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_kube_ovn() {
        assert_eq!(port_group("x", "allow-from-y"), "allow.from.y.x");
        assert_eq!(port_group("ns", "1abc"), "np1abc.ns");
        let pg = port_group("x", "deny-all");
        assert_eq!(
            address_set(&pg, Direction::Ingress, false, Family::V4, 0),
            "deny.all.x.ingress.allow.IPv4.0"
        );
        assert_eq!(
            address_set(&pg, Direction::Egress, true, Family::V6, 2),
            "deny.all.x.egress.except.IPv6.2"
        );
        // a direction governed without rules: Kube-OVN's `.all` sets and ACL name
        assert_eq!(
            no_rules_address_set(&pg, Direction::Ingress, true, Family::V4),
            "deny.all.x.ingress.except.IPv4.all"
        );
        assert_eq!(
            no_rules_acl_name("x", "deny-all", Direction::Egress, Family::V6),
            "np/deny-all.x/egress/IPv6/all"
        );
        let long = allow_acl_name("x", &"p".repeat(80), Direction::Ingress, Family::V4, 0);
        assert_eq!(long.len(), 63);
        assert!(long.ends_with("..."));
    }

    #[test]
    fn policy_keys_round_trip_their_external_ids() {
        let key = PolicyKey::new("x", "allow-web");
        assert_eq!(key.to_string(), "x/allow-web");
        assert_eq!(policy_of_id("x/allow-web"), Some(key.clone()));
        assert_eq!(
            address_set_id(&key, Direction::Egress),
            "x/allow-web/egress"
        );
        assert_eq!(policy_of_address_set_id("x/allow-web/ingress"), Some(key));
        // the node groups' `node/<node>` reads as a key too: the caller checks the name
        assert_eq!(policy_of_id("node/n1"), Some(PolicyKey::new("node", "n1")));
        assert_eq!(policy_of_id("nokey"), None);
        assert_eq!(policy_of_address_set_id("x/allow-web"), None);
        assert_eq!(policy_of_address_set_id("a/b/c/d"), None);
    }
}

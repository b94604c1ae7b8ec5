//! What `Subnet::validate` cannot see: the CIDR block parses, the gateway and every
//! `excludeIps` entry lie inside it, `protocol` matches its families, and no other Subnet
//! of the same VPC overlaps it (Kube-OVN's `util.ValidateSubnet` and `checkSubnetConflict`).
//! The result is the subnet's desired shape with Kube-OVN's defaults filled in.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};

use ipnet::IpNet;

use kube_ovn_api::annotations::{AnnotationValue, CidrPair, ExcludeIp, IpPair};
pub use kube_ovn_api::crd::{parse_cidr, SubnetInvalid};
use kube_ovn_api::crd::{Protocol, Subnet};

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> SubnetInvalid {
    SubnetInvalid::new(field, reason)
}

/// A validated Subnet: everything the reconciler writes, defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidSubnet {
    /// The Subnet's (and its logical switch's) name.
    pub name: String,
    /// The VPC, whose router is named after it (`ovn-cluster` by default).
    pub vpc: String,
    /// The CIDR block, host bits cleared.
    pub cidr: CidrPair,
    /// The gateway (the first address of each CIDR unless given).
    pub gateway: IpPair,
    /// `spec.excludeIps`, plus the gateway when the spec lists none (Kube-OVN's default).
    pub exclude_ips: Vec<ExcludeIp>,
    /// The families of `cidr`.
    pub protocol: Protocol,
    /// Namespaces bound to the subnet.
    pub namespaces: Vec<String>,
}

/// The VPC of a subnet: `spec.vpc`, or `default_vpc` when empty.
pub fn vpc_of(subnet: &Subnet, default_vpc: &str) -> String {
    match subnet.spec.vpc.as_deref() {
        Some(vpc) if !vpc.is_empty() => vpc.to_string(),
        _ => default_vpc.to_string(),
    }
}

fn contains(cidr: &CidrPair, ip: IpAddr) -> bool {
    cidr.nets().iter().any(|net| net.contains(&ip))
}

fn protocol_of(cidr: &CidrPair) -> Protocol {
    match (cidr.v4, cidr.v6) {
        (Some(_), Some(_)) => Protocol::Dual,
        (None, Some(_)) => Protocol::IPv6,
        _ => Protocol::IPv4,
    }
}

fn gateway(subnet: &Subnet, cidr: &CidrPair) -> Result<IpPair, SubnetInvalid> {
    let field = "spec.gateway";
    let text = subnet.spec.gateway.as_deref().unwrap_or_default();
    if text.is_empty() {
        // the first address after the network's (util.GetGwByCidr)
        let first = |net: IpNet| net.hosts().find(|ip| *ip != net.network());
        let pick = |net: Option<IpNet>| net.and_then(first);
        let v4 = pick(cidr.v4.map(IpNet::V4)).and_then(|ip| match ip {
            IpAddr::V4(a) => Some(a),
            IpAddr::V6(_) => None,
        });
        let v6 = pick(cidr.v6.map(IpNet::V6)).and_then(|ip| match ip {
            IpAddr::V6(a) => Some(a),
            IpAddr::V4(_) => None,
        });
        return Ok(IpPair { v4, v6 });
    }
    let gw = IpPair::parse(text).map_err(|why| invalid(field, why))?;
    if gw.v4.is_some() != cidr.v4.is_some() || gw.v6.is_some() != cidr.v6.is_some() {
        return Err(invalid(
            field,
            format!("{text:?} does not give one address per family of the CIDR block"),
        ));
    }
    for ip in gw.addrs() {
        if !contains(cidr, ip) {
            return Err(invalid(field, format!("{ip} is not inside the CIDR block")));
        }
    }
    Ok(gw)
}

fn exclude_ips(subnet: &Subnet, cidr: &CidrPair) -> Result<Vec<ExcludeIp>, SubnetInvalid> {
    let mut out = Vec::new();
    for (i, text) in subnet.spec.exclude_ips.iter().enumerate() {
        let field = format!("spec.excludeIps[{i}]");
        let entry = ExcludeIp::parse(text).map_err(|why| invalid(&field, why))?;
        let ends = match entry {
            ExcludeIp::Addr(a) => [a, a],
            ExcludeIp::Range(a, b) => [a, b],
        };
        if let Some(outside) = ends.into_iter().find(|ip| !contains(cidr, *ip)) {
            return Err(invalid(
                field,
                format!("{outside} is not inside the CIDR block"),
            ));
        }
        out.push(entry);
    }
    Ok(out)
}

fn check_protocol(subnet: &Subnet, cidr: &CidrPair) -> Result<Protocol, SubnetInvalid> {
    let actual = protocol_of(cidr);
    match &subnet.spec.protocol {
        None => Ok(actual),
        Some(Protocol::Mac) => Err(invalid(
            "spec.protocol",
            "Mac (underlay MAC-only) subnets are not implemented",
        )),
        Some(given) if *given != actual => Err(invalid(
            "spec.protocol",
            format!("{given} does not match the CIDR block, which is {actual}"),
        )),
        Some(given) => Ok(given.clone()),
    }
}

/// Whether `other` came first: older creation time, then smaller name. Of two
/// overlapping subnets the newer one is refused, so the older one keeps working.
fn came_before(other: &Subnet, subnet: &Subnet) -> bool {
    let key = |s: &Subnet| {
        (
            s.metadata.creation_timestamp.clone().map(|t| t.0),
            s.metadata.name.clone(),
        )
    };
    key(other) < key(subnet)
}

fn check_overlap(
    subnet: &Subnet,
    cidr: &CidrPair,
    vpc: &str,
    others: &[Subnet],
    default_vpc: &str,
) -> Result<(), SubnetInvalid> {
    let ours = cidr.nets();
    for other in others {
        let deleting = other.metadata.deletion_timestamp.is_some();
        if other.metadata.name == subnet.metadata.name
            || deleting
            || vpc_of(other, default_vpc) != vpc
            || !came_before(other, subnet)
        {
            continue;
        }
        let Ok(theirs) = parse_cidr(other) else {
            continue;
        };
        let overlap = theirs
            .nets()
            .into_iter()
            .find(|t| ours.iter().any(|o| o.contains(t) || t.contains(o)));
        if let Some(net) = overlap {
            let name = other.metadata.name.as_deref().unwrap_or_default();
            return Err(invalid(
                "spec.cidrBlock",
                format!("overlaps {net} of subnet {name} in VPC {vpc}"),
            ));
        }
    }
    Ok(())
}

/// Underlay and attachment-network subnets need parts not written yet: refused by name
/// rather than half-realized as overlay ones.
fn check_implemented(subnet: &Subnet) -> Result<(), SubnetInvalid> {
    if subnet.spec.vlan.as_deref().is_some_and(|v| !v.is_empty()) {
        return Err(invalid(
            "spec.vlan",
            "underlay (vlan) subnets are not implemented",
        ));
    }
    match subnet.spec.provider.as_deref() {
        None | Some("") | Some("ovn") => Ok(()),
        Some(other) => Err(invalid(
            "spec.provider",
            format!("provider {other:?} is not implemented, only \"ovn\""),
        )),
    }
}

/// A subnet's [`validate`] on its own (no overlap check), remembered per uid,
/// resourceVersion and default VPC: every pod of a subnet asks, and a restart over
/// 100,000 pods asked 100,000 times for the same few answers. A subnet without uid or
/// resourceVersion (not from an API server) is validated each time.
#[derive(Debug, Default)]
pub struct Validations {
    /// By uid: the resourceVersion and default VPC the answer is for, and the answer.
    memo: Mutex<HashMap<String, (String, String, ValidSubnet)>>,
}

impl Validations {
    /// `subnet` validated, from memory when it has not changed since.
    pub fn of(&self, subnet: &Subnet, default_vpc: &str) -> Result<ValidSubnet, SubnetInvalid> {
        let (Some(uid), Some(rv)) = (&subnet.metadata.uid, &subnet.metadata.resource_version)
        else {
            return validate(subnet, &[], default_vpc);
        };
        {
            let memo = self.memo.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some((seen_rv, vpc, valid)) = memo.get(uid) {
                if seen_rv == rv && vpc == default_vpc {
                    return Ok(valid.clone());
                }
            }
        }
        let valid = validate(subnet, &[], default_vpc)?;
        self.memo
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                uid.clone(),
                (rv.clone(), default_vpc.to_owned(), valid.clone()),
            );
        Ok(valid)
    }

    /// Drops what is remembered of a deleted subnet.
    pub fn forget(&self, subnet: &Subnet) {
        if let Some(uid) = &subnet.metadata.uid {
            let mut memo = self.memo.lock().unwrap_or_else(PoisonError::into_inner);
            memo.remove(uid);
        }
    }
}

/// Validates `subnet` against the enum checks of its spec and the rules above;
/// `others` are the cluster's Subnets (it may be among them).
pub fn validate(
    subnet: &Subnet,
    others: &[Subnet],
    default_vpc: &str,
) -> Result<ValidSubnet, SubnetInvalid> {
    subnet.spec.validate().map_err(|e| SubnetInvalid {
        reason: format!(
            "unknown value {:?}, expected one of: {}",
            e.value,
            e.expected.join(", ")
        ),
        field: e.field,
    })?;
    check_implemented(subnet)?;
    let cidr = parse_cidr(subnet)?;
    let protocol = check_protocol(subnet, &cidr)?;
    let gateway = gateway(subnet, &cidr)?;
    let mut exclude = exclude_ips(subnet, &cidr)?;
    if exclude.is_empty() {
        exclude = gateway.addrs().into_iter().map(ExcludeIp::Addr).collect();
    }
    let vpc = vpc_of(subnet, default_vpc);
    check_overlap(subnet, &cidr, &vpc, others, default_vpc)?;
    Ok(ValidSubnet {
        name: subnet.metadata.name.clone().unwrap_or_default(),
        vpc,
        cidr,
        gateway,
        exclude_ips: exclude,
        protocol,
        namespaces: subnet.spec.namespaces.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_ovn_api::crd::SubnetSpec;

    fn subnet(name: &str, spec: SubnetSpec) -> Subnet {
        let mut s = Subnet::new(name, spec);
        s.metadata.name = Some(name.to_string());
        s
    }

    fn spec(cidr: &str) -> SubnetSpec {
        SubnetSpec {
            cidr_block: Some(cidr.to_string()),
            ..Default::default()
        }
    }

    #[test]
    fn dual_stack_defaults_gateway_and_excludes_per_family() {
        let s = subnet("d", spec("10.16.0.5/16,fd00:10:16::/64"));
        let v = validate(&s, &[], "ovn-cluster").unwrap();
        assert_eq!(v.protocol, Protocol::Dual);
        assert_eq!(v.cidr.v4.unwrap().to_string(), "10.16.0.0/16");
        assert_eq!(v.gateway.render(), "10.16.0.1,fd00:10:16::1");
        assert_eq!(v.exclude_ips.len(), 2);
        assert_eq!(v.vpc, "ovn-cluster");
    }

    #[test]
    fn a_range_ending_outside_the_cidr_is_refused() {
        let s = subnet(
            "r",
            SubnetSpec {
                exclude_ips: vec!["10.1.0.250..10.1.1.3".into()],
                ..spec("10.1.0.0/24")
            },
        );
        let err = validate(&s, &[], "ovn-cluster").unwrap_err();
        assert_eq!(err.field, "spec.excludeIps[0]");
        assert!(err.reason.contains("10.1.1.3"), "{err}");
    }

    #[test]
    fn overlap_counts_only_within_one_vpc() {
        let older = subnet("a", spec("10.2.0.0/16"));
        let other_vpc = subnet(
            "b",
            SubnetSpec {
                vpc: Some("vpc1".into()),
                ..spec("10.2.0.0/24")
            },
        );
        let all = [older.clone(), other_vpc.clone()];
        assert!(validate(&other_vpc, &all, "ovn-cluster").is_ok());
        let newer = subnet("c", spec("10.2.3.0/24"));
        let err = validate(&newer, &[older, newer.clone()], "ovn-cluster").unwrap_err();
        assert_eq!(err.field, "spec.cidrBlock");
        assert!(err.reason.contains("subnet a"), "{err}");
    }

    #[test]
    fn underlay_and_other_providers_are_refused_by_name() {
        let vlan = subnet(
            "v",
            SubnetSpec {
                vlan: Some("vlan10".into()),
                ..spec("10.3.0.0/24")
            },
        );
        assert_eq!(validate(&vlan, &[], "x").unwrap_err().field, "spec.vlan");
        let attach = subnet(
            "p",
            SubnetSpec {
                provider: Some("net1.default".into()),
                ..spec("10.3.0.0/24")
            },
        );
        assert_eq!(
            validate(&attach, &[], "x").unwrap_err().field,
            "spec.provider"
        );
    }
}

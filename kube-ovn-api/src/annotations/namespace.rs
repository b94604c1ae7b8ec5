//! A namespace's annotations, kept by the controller from the Subnets that list the
//! namespace (`logical_switch`, `cidr`, `exclude_ips`) and the IPPools bound to it.

use super::fields::{annotation_struct, AnnotationValue, Reader, Writer};
use super::value::{join, split_list, CidrPair, ExcludeIp, Names};
use super::{AnnotationError, AnnotationMap, Provider};

/// The `cidr` of a namespace: each subnet's CIDR block, `;`-separated
/// (`10.16.0.0/16;10.17.0.0/16,fd00::/112`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SubnetCidrs(pub Vec<CidrPair>);

impl AnnotationValue for SubnetCidrs {
    fn parse(text: &str) -> Result<Self, String> {
        split_list(text, ';')?
            .into_iter()
            .map(CidrPair::parse)
            .collect::<Result<_, _>>()
            .map(SubnetCidrs)
    }
    fn render(&self) -> String {
        self.0
            .iter()
            .map(CidrPair::render)
            .collect::<Vec<_>>()
            .join(";")
    }
}

/// The `exclude_ips` of a namespace: each subnet's exclusions (addresses or `a..b`
/// ranges, `,`-separated), subnets `;`-separated; a subnet without exclusions is empty.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SubnetExcludeIps(pub Vec<Vec<ExcludeIp>>);

impl AnnotationValue for SubnetExcludeIps {
    fn parse(text: &str) -> Result<Self, String> {
        let group = |g: &str| -> Result<Vec<ExcludeIp>, String> {
            if g.is_empty() {
                return Ok(Vec::new());
            }
            split_list(g, ',')?
                .into_iter()
                .map(ExcludeIp::parse)
                .collect()
        };
        text.split(';')
            .map(group)
            .collect::<Result<_, _>>()
            .map(SubnetExcludeIps)
    }
    fn render(&self) -> String {
        self.0
            .iter()
            .map(|g| join(g, ","))
            .collect::<Vec<_>>()
            .join(";")
    }
}

annotation_struct! {
    /// `ovn.kubernetes.io/*` keys of a Namespace.
    pub struct NamespaceAnnotations {
        /// The subnets whose `namespaces` list this namespace, `,`-separated.
        logical_switch: Names => "logical_switch",
        /// Those subnets' CIDR blocks.
        cidr: SubnetCidrs => "cidr",
        /// Those subnets' exclusions.
        exclude_ips: SubnetExcludeIps => "exclude_ips",
        /// IPPools bound to the namespace, `,`-separated.
        ip_pool: Names => "ip_pool",
    }
}

impl NamespaceAnnotations {
    /// Reads a namespace's keys.
    pub fn parse(map: &AnnotationMap) -> Result<NamespaceAnnotations, AnnotationError> {
        let prefix = Provider::ovn().key_prefix();
        NamespaceAnnotations::read(&Reader {
            map,
            prefix: &prefix,
        })
    }

    /// Every well-formed key, and an error for each malformed one (left unset).
    pub fn parse_lenient(map: &AnnotationMap) -> (Self, Vec<AnnotationError>) {
        let prefix = Provider::ovn().key_prefix();
        Self::read_lenient(&Reader {
            map,
            prefix: &prefix,
        })
    }

    /// The full key of the `ip_pool` binding (`ovn.kubernetes.io/ip_pool`), for a
    /// merge patch that sets or removes only it.
    pub fn ip_pool_key() -> String {
        format!("{}ip_pool", Provider::ovn().key_prefix())
    }

    /// Writes a namespace's keys (unset fields removed, other keys kept).
    pub fn write_into(&self, map: &mut AnnotationMap) {
        let prefix = Provider::ovn().key_prefix();
        self.write(&mut Writer {
            map,
            prefix: &prefix,
        });
    }
}

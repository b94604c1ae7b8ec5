//! The `kubeovn.io/v1` custom resources, with Kube-OVN's field names, scopes, short names,
//! printer columns and status subresources.
//!
//! One file per kind. Conventions, so a round trip through these types does not invent or
//! drop fields:
//! * scalars are `Option`s, absent on the wire when `None`; `false`, `0` and `""` written
//!   by a user or by Kube-OVN's Go controller come back as written;
//! * lists are `Vec`s, absent when empty (Go's `omitempty` treats empty and absent alike);
//! * enum-like strings are open enums (see `open_enum.rs`) with an `Other(String)` variant; each
//!   spec's `validate` names the field holding an unknown value.
//!
//! [`crds`] gives the CustomResourceDefinitions; `dist/crds.yaml` is [`crds_yaml`]'s output,
//! written by `cargo run -p kube-ovn-api --bin kube-ovn-crdgen > dist/crds.yaml`. A cluster whose
//! CRDs came from Kube-OVN's own chart works too: the tests in `kube-ovn-api/tests/crd_*.rs`
//! compare both.

// kube-derive's `printcolumn(name = .., type_ = "string", ..)` repeats `type_ = "string"`
// across columns, which this lint takes for duplicated attributes.
#![allow(clippy::duplicated_attributes)]

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

pub mod conditions;
mod ip;
mod ip_count;
mod ippool;
mod open_enum;
mod ovn_dnat_rule;
mod ovn_eip;
mod ovn_fip;
mod ovn_snat_rule;
mod provider_network;
mod qos_policy;
mod subnet;
mod subnet_cidr;
mod switch_lb_rule;
mod vip;
mod vlan;
mod vpc;

pub use conditions::{Condition, ConditionStatus, ProviderNetworkCondition};
pub use ip::{IPSpec, IP};
pub use ip_count::IpCount;
pub use ippool::{IPPool, IPPoolSpec, IPPoolStatus};
pub use open_enum::InvalidField;
pub use ovn_dnat_rule::{OvnDnatRule, OvnDnatRuleSpec, OvnDnatRuleStatus};
pub use ovn_eip::{OvnEip, OvnEipSpec, OvnEipStatus, OvnEipType};
pub use ovn_fip::{NatIpType, OvnFip, OvnFipSpec, OvnFipStatus};
pub use ovn_snat_rule::{OvnSnatRule, OvnSnatRuleSpec, OvnSnatRuleStatus};
pub use provider_network::{
    CustomInterface, ProviderNetwork, ProviderNetworkSpec, ProviderNetworkStatus,
};
pub use qos_policy::{
    BandwidthLimitRule, QoSPolicy, QoSPolicyBindingType, QoSPolicySpec, QoSPolicyStatus,
    QoSRuleDirection, QoSRuleMatchType,
};
pub use subnet::{
    Acl, AclAction, AclDirection, GatewayType, NatOutgoingPolicyMatch, NatOutgoingPolicyRule,
    NatOutgoingPolicyRuleStatus, NatPolicyAction, Protocol, Subnet, SubnetSpec, SubnetStatus,
    U2oFeatures,
};
pub use subnet_cidr::{parse_cidr, SubnetInvalid};
pub use switch_lb_rule::{SlrPort, SwitchLBRule, SwitchLBRuleSpec, SwitchLBRuleStatus};
pub use vip::{Vip, VipSpec, VipStatus};
pub use vlan::{Vlan, VlanSpec, VlanStatus};
pub use vpc::{
    BfdPort, BfdPortStatus, PolicyRoute, PolicyRouteAction, RoutePolicy, StaticRoute, Vpc,
    VpcPeering, VpcSpec, VpcStatus,
};

/// The API group of every kind here.
pub const GROUP: &str = "kubeovn.io";
/// The only served (and stored) version.
pub const VERSION: &str = "v1";

/// Whether a kind's CRD has a `status` subresource, i.e. whether the controller writes
/// status through `/status` (`Api::patch_status`) or with the object itself (`Api::patch`).
/// Kube-OVN's chart gives IP no status at all and Vip a status without the subresource.
pub trait StatusSubresource {
    /// `true` when `/status` exists for this kind.
    const STATUS_SUBRESOURCE: bool;
}

macro_rules! status_subresource {
    ($($kind:ty => $has:expr),+ $(,)?) => {
        $(impl StatusSubresource for $kind { const STATUS_SUBRESOURCE: bool = $has; })+
    };
}

status_subresource! {
    Subnet => true, IP => false, IPPool => true, Vpc => true, Vip => false, Vlan => true,
    ProviderNetwork => true, OvnEip => true, OvnFip => true, OvnSnatRule => true,
    OvnDnatRule => true, QoSPolicy => true, SwitchLBRule => true,
}

/// The CustomResourceDefinitions of every kind, in Kube-OVN's chart order.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        SwitchLBRule::crd(),
        OvnEip::crd(),
        OvnFip::crd(),
        OvnSnatRule::crd(),
        OvnDnatRule::crd(),
        Vpc::crd(),
        IP::crd(),
        without_status_subresource(Vip::crd()),
        Subnet::crd(),
        IPPool::crd(),
        Vlan::crd(),
        ProviderNetwork::crd(),
        QoSPolicy::crd(),
    ]
}

/// kube-derive adds the status subresource whenever a kind has a status; Kube-OVN's Vip has a
/// status yet no subresource, and a controller patching `/status` of a chart-installed Vip
/// would get 404, so ours matches the chart.
fn without_status_subresource(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    for version in &mut crd.spec.versions {
        version.subresources = None;
    }
    crd
}

/// The command that regenerates `dist/crds.yaml`.
pub const CRDS_YAML_COMMAND: &str =
    "cargo run -p kube-ovn-api --bin kube-ovn-crdgen > dist/crds.yaml";

/// Printing the CRDs as YAML failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot print CustomResourceDefinition {name} as YAML")]
pub struct CrdYamlError {
    /// The CRD's `metadata.name`.
    pub name: String,
    #[source]
    source: serde_saphyr::SerializeError,
}

/// `dist/crds.yaml`: every CRD of [`crds`] as one multi-document YAML stream, with an
/// `@generated` header naming [`CRDS_YAML_COMMAND`].
pub fn crds_yaml() -> Result<String, CrdYamlError> {
    let mut out =
        format!("# @generated by `{CRDS_YAML_COMMAND}` from kube-ovn-api/src/crd/. Do not edit.\n");
    for crd in crds() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let doc = serde_saphyr::to_string(&crd).map_err(|source| CrdYamlError { name, source })?;
        out.push_str("---\n");
        out.push_str(&doc);
        if !doc.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}

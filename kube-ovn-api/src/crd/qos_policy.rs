//! `QoSPolicy` (`qos-policies.kubeovn.io`, short name `qos`): bandwidth limits for EIPs and
//! VPC NAT gateways.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::conditions::Condition;
use super::open_enum::open_enum;
use super::InvalidField;

open_enum! {
    /// `spec.bindingType`: what the policy is attached to.
    pub enum QoSPolicyBindingType {
        Eip = "EIP",
        NatGw = "NATGW",
    }
}

open_enum! {
    /// `bandwidthLimitRules[].direction`.
    pub enum QoSRuleDirection {
        Ingress = "ingress",
        Egress = "egress",
    }
}

open_enum! {
    /// `bandwidthLimitRules[].matchType`.
    pub enum QoSRuleMatchType {
        Ip = "ip",
    }
}

/// The limits and what they bind to.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kubeovn.io",
    version = "v1",
    kind = "QoSPolicy",
    plural = "qos-policies",
    singular = "qos-policy",
    shortname = "qos",
    status = "QoSPolicyStatus",
    derive = "PartialEq",
    doc = "A set of bandwidth limit rules.",
    printcolumn(name = "Shared", type_ = "string", json_path = ".spec.shared"),
    printcolumn(
        name = "BindingType",
        type_ = "string",
        json_path = ".spec.bindingType"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct QoSPolicySpec {
    /// The rules, keyed by name (a map list, so server-side apply merges by name).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub bandwidth_limit_rules: Vec<BandwidthLimitRule>,
    /// May be bound to several objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<bool>,
    /// `EIP` or `NATGW`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binding_type: Option<QoSPolicyBindingType>,
}

/// One bandwidth limit.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BandwidthLimitRule {
    /// Unique within the policy.
    pub name: String,
    /// Interface the limit applies to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// Rate limit in Mbit/s, as a string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_max: Option<String>,
    /// Burst in Mbit, as a string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_max: Option<String>,
    /// Order among the rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// `ingress` or `egress`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<QoSRuleDirection>,
    /// `ip`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_type: Option<QoSRuleMatchType>,
    /// The address or CIDR to match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_value: Option<String>,
}

/// The rules as applied.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QoSPolicyStatus {
    /// Rules as applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bandwidth_limit_rules: Vec<BandwidthLimitRule>,
    /// Sharing as applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<bool>,
    /// Binding as applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binding_type: Option<QoSPolicyBindingType>,
    /// Ready conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

impl QoSPolicySpec {
    /// Checks every enum-valued field; the first unknown value is the error.
    pub fn validate(&self) -> Result<(), InvalidField> {
        if let Some(binding_type) = &self.binding_type {
            binding_type.check("spec.bindingType")?;
        }
        for (i, rule) in self.bandwidth_limit_rules.iter().enumerate() {
            if let Some(direction) = &rule.direction {
                direction.check(format!("spec.bandwidthLimitRules[{i}].direction"))?;
            }
            if let Some(match_type) = &rule.match_type {
                match_type.check(format!("spec.bandwidthLimitRules[{i}].matchType"))?;
            }
        }
        Ok(())
    }
}

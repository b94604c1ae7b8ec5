//! `SwitchLBRule` (`switch-lb-rules.kubeovn.io`, short name `slr`): a load balancer on a Vip,
//! realized by Kube-OVN as a Service `slr-<name>` with its Endpoints.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::conditions::Condition;

/// The virtual address, its ports and its backends.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kubeovn.io",
    version = "v1",
    kind = "SwitchLBRule",
    plural = "switch-lb-rules",
    singular = "switch-lb-rule",
    shortname = "slr",
    status = "SwitchLBRuleStatus",
    derive = "PartialEq",
    doc = "A load balancer on a logical switch.",
    printcolumn(name = "vip", type_ = "string", json_path = ".spec.vip"),
    printcolumn(name = "port(s)", type_ = "string", json_path = ".status.ports"),
    printcolumn(name = "service", type_ = "string", json_path = ".status.service"),
    printcolumn(
        name = "age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct SwitchLBRuleSpec {
    /// The virtual address (a Vip name or an address).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vip: Option<String>,
    /// Namespace of the backends and of the generated Service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Pod label selectors, `key:value`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selector: Vec<String>,
    /// Backend addresses, when there is no selector.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<String>,
    /// `ClientIP` or `None`, as a Service's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_affinity: Option<String>,
    /// Ports served.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<SlrPort>,
}

/// One served port.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SlrPort {
    /// Port name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Port on the virtual address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
    /// Port on the backends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_port: Option<i32>,
    /// `TCP` or `UDP`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
}

/// The generated Service.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SwitchLBRuleStatus {
    /// Ready conditions (Kube-OVN's Go type has them; its chart's schema does not).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Ports, e.g. `80/TCP,443/TCP`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<String>,
    /// `<namespace>/<service>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
}

//! The defaults Kube-OVN writes back into a valid Subnet's spec (`formatSubnet` and
//! `checkSubnetChanged` in its `pkg/controller/subnet.go`), so `kubectl get subnets`
//! shows the provider, VPC, protocol, gateway type and gateway a subnet really has,
//! and tools that read the spec (Kube-OVN's own scripts, `kubectl ko`) find them.
//!
//! Only fields left empty are filled: a value the user wrote is never replaced (a
//! protocol that disagrees with the CIDR is a validation error, not rewritten).

use serde_json::{json, Map, Value};

use super::validate::ValidSubnet;
use kube_ovn_api::annotations::AnnotationValue;
use kube_ovn_api::crd::{GatewayType, Subnet};

/// The provider of subnets on the OVN overlay.
pub const OVN_PROVIDER: &str = "ovn";

/// The JSON merge patch of `spec` fields `subnet` leaves empty, or `None` when there
/// is nothing to fill. Applying it twice changes nothing the second time.
pub fn missing_spec_defaults(subnet: &Subnet, valid: &ValidSubnet) -> Option<Value> {
    let spec = &subnet.spec;
    let mut fill = Map::new();
    let provider = spec.provider.as_deref().filter(|p| !p.is_empty());
    if provider.is_none() {
        fill.insert("provider".into(), json!(OVN_PROVIDER));
    }
    if spec.protocol.is_none() {
        fill.insert("protocol".into(), json!(valid.protocol));
    }
    if spec.gateway_type.is_none() {
        fill.insert("gatewayType".into(), json!(GatewayType::Distributed));
    }
    // only `ovn` subnets validate today, and each of them is in a VPC
    if spec.vpc.as_deref().is_none_or(str::is_empty) {
        fill.insert("vpc".into(), json!(valid.vpc));
    }
    if spec.gateway.as_deref().is_none_or(str::is_empty) {
        fill.insert("gateway".into(), json!(valid.gateway.render()));
    }
    if spec.exclude_ips.is_empty() && !valid.exclude_ips.is_empty() {
        let excludes: Vec<String> = valid.exclude_ips.iter().map(ToString::to_string).collect();
        fill.insert("excludeIps".into(), json!(excludes));
    }
    (!fill.is_empty()).then(|| json!({ "spec": fill }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subnet::validate;
    use kube_ovn_api::crd::SubnetSpec;

    fn subnet(spec: SubnetSpec) -> Subnet {
        Subnet::new("s1", spec)
    }

    #[test]
    fn empty_fields_get_kube_ovns_defaults() {
        let s = subnet(SubnetSpec {
            cidr_block: Some("10.66.0.0/24".into()),
            ..Default::default()
        });
        let valid = validate(&s, &[], "ovn-cluster").unwrap();
        let patch = missing_spec_defaults(&s, &valid).unwrap();
        assert_eq!(
            patch,
            json!({"spec": {"provider": "ovn", "protocol": "IPv4", "gatewayType": "distributed",
                "vpc": "ovn-cluster", "gateway": "10.66.0.1", "excludeIps": ["10.66.0.1"]}})
        );
    }

    #[test]
    fn written_values_are_kept_and_a_filled_spec_needs_nothing() {
        let s = subnet(SubnetSpec {
            cidr_block: Some("10.66.0.0/24,fd00:66::/64".into()),
            gateway: Some("10.66.0.254,fd00:66::1".into()),
            exclude_ips: vec!["10.66.0.200..10.66.0.210".into()],
            gateway_type: Some(GatewayType::Centralized),
            ..Default::default()
        });
        let valid = validate(&s, &[], "ovn-cluster").unwrap();
        let patch = missing_spec_defaults(&s, &valid).unwrap();
        assert_eq!(
            patch,
            json!({"spec": {"provider": "ovn", "protocol": "Dual", "vpc": "ovn-cluster"}})
        );
        // the spec after the patch: nothing more to fill
        let mut filled = serde_json::to_value(&s).unwrap();
        json_patch_merge(&mut filled, &patch);
        let filled: Subnet = serde_json::from_value(filled).unwrap();
        assert_eq!(missing_spec_defaults(&filled, &valid), None);
    }

    #[test]
    fn a_written_provider_and_vpc_are_kept() {
        let s = subnet(SubnetSpec {
            cidr_block: Some("172.30.0.0/24".into()),
            provider: Some("ovn".into()),
            vpc: Some("ovn-cluster".into()),
            ..Default::default()
        });
        let valid = validate(&s, &[], "ovn-cluster").unwrap();
        let patch = missing_spec_defaults(&s, &valid).unwrap();
        assert!(patch["spec"].get("vpc").is_none(), "{patch}");
        assert!(patch["spec"].get("provider").is_none(), "{patch}");
        assert_eq!(patch["spec"]["gateway"], "172.30.0.1");
    }

    fn json_patch_merge(target: &mut Value, patch: &Value) {
        match (target, patch) {
            (Value::Object(t), Value::Object(p)) => {
                for (k, v) in p {
                    json_patch_merge(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
            (t, p) => *t = p.clone(),
        }
    }
}

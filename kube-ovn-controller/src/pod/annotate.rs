//! The result annotations of a pod's primary NIC (`allocated`, `ip_address`,
//! `mac_address`, `cidr`, `gateway`, `logical_switch`, `pod_nic_type`, `routed`), and
//! the merge-patch that writes only the keys that differ.

use ipam::Allocation;
use serde_json::{json, Map, Value};

use kube_ovn_api::annotations::{AnnotationMap, CidrPair, IpPair, NicType, PodNetwork, Provider};

/// What the controller tells the CNI about the NIC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NicResult {
    /// The subnet.
    pub subnet: String,
    /// Its CIDR block.
    pub cidr: CidrPair,
    /// Its gateway(s).
    pub gateway: IpPair,
    /// The allocation.
    pub allocation: Allocation,
    /// The port is in NB.
    pub routed: bool,
}

/// `current` with the result fields set from `result` (every other field kept).
pub fn with_result(current: &PodNetwork, result: &NicResult) -> PodNetwork {
    let alloc = &result.allocation;
    PodNetwork {
        allocated: Some(true),
        ip_address: Some(IpPair {
            v4: alloc.v4,
            v6: alloc.v6,
        }),
        mac_address: alloc.mac,
        cidr: Some(result.cidr),
        gateway: Some(result.gateway),
        logical_switch: Some(result.subnet.clone()),
        pod_nic_type: Some(current.pod_nic_type.unwrap_or(NicType::VethPair)),
        routed: result.routed.then_some(true),
        ..current.clone()
    }
}

/// `current` without the result fields: what a pod that lost its address looks like
/// (the CNI then waits, and the next reconcile allocates afresh).
pub fn without_result(current: &PodNetwork) -> PodNetwork {
    PodNetwork {
        allocated: None,
        ip_address: None,
        mac_address: None,
        cidr: None,
        gateway: None,
        routed: None,
        ..current.clone()
    }
}

/// The merge-patch of `metadata.annotations` turning `current` into one that carries
/// `wanted` for `provider` (null removes a key); None when nothing differs.
pub fn annotation_patch(
    current: &AnnotationMap,
    provider: &Provider,
    wanted: &PodNetwork,
) -> Option<Value> {
    let mut rendered = current.clone();
    wanted.write_into(provider, &mut rendered);
    let mut changes = Map::new();
    for key in current.keys().chain(rendered.keys()) {
        let (have, want) = (current.get(key), rendered.get(key));
        if have != want {
            let value = want.map_or(Value::Null, |v| Value::String(v.clone()));
            changes.insert(key.clone(), value);
        }
    }
    (!changes.is_empty()).then(|| json!({ "metadata": { "annotations": changes } }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result() -> NicResult {
        NicResult {
            subnet: "ovn-default".into(),
            cidr: CidrPair::v4("10.16.0.0/16".parse().unwrap()),
            gateway: IpPair::v4("10.16.0.1".parse().unwrap()),
            allocation: Allocation {
                v4: Some("10.16.0.2".parse().unwrap()),
                v6: None,
                mac: Some(ipam::Mac([0, 0, 0, 1, 2, 3])),
            },
            routed: true,
        }
    }

    #[test]
    fn patch_sets_the_result_keys_once_and_keeps_others() {
        let provider = Provider::ovn();
        let mut map = AnnotationMap::new();
        map.insert("other/key".into(), "x".into());
        let (current, errors) = PodNetwork::parse_lenient(&provider, &map);
        assert!(errors.is_empty());
        let wanted = with_result(&current, &result());
        let patch = annotation_patch(&map, &provider, &wanted).expect("a patch");
        let keys = patch["metadata"]["annotations"].as_object().unwrap();
        assert_eq!(keys["ovn.kubernetes.io/ip_address"], "10.16.0.2");
        assert_eq!(keys["ovn.kubernetes.io/mac_address"], "00:00:00:01:02:03");
        assert_eq!(keys["ovn.kubernetes.io/cidr"], "10.16.0.0/16");
        assert_eq!(keys["ovn.kubernetes.io/gateway"], "10.16.0.1");
        assert_eq!(keys["ovn.kubernetes.io/logical_switch"], "ovn-default");
        assert_eq!(keys["ovn.kubernetes.io/pod_nic_type"], "veth-pair");
        assert_eq!(keys["ovn.kubernetes.io/allocated"], "true");
        assert_eq!(keys["ovn.kubernetes.io/routed"], "true");
        assert!(!keys.contains_key("other/key"));
        // applied, nothing differs any more
        for (k, v) in keys {
            map.insert(k.clone(), v.as_str().unwrap().to_string());
        }
        let (current, _) = PodNetwork::parse_lenient(&provider, &map);
        assert_eq!(
            annotation_patch(&map, &provider, &with_result(&current, &result())),
            None
        );
        let cleared = annotation_patch(&map, &provider, &without_result(&current)).unwrap();
        assert_eq!(
            cleared["metadata"]["annotations"]["ovn.kubernetes.io/ip_address"],
            Value::Null
        );
    }
}

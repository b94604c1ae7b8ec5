//! Unknown values in enum-like fields: the object still decodes, keeps the value as written,
//! and `validate` names the field.

use kube_ovn_api::crd::{
    AclAction, GatewayType, InvalidField, Protocol, QoSPolicy, RoutePolicy, Subnet, Vpc,
};
use serde_json::json;

fn subnet(spec: serde_json::Value) -> Subnet {
    serde_json::from_value(json!({
        "apiVersion": "kubeovn.io/v1", "kind": "Subnet",
        "metadata": {"name": "s"}, "spec": spec,
    }))
    .expect("a Subnet with unknown enum values still decodes")
}

#[test]
fn known_values_validate() {
    let s = subnet(json!({
        "protocol": "Dual", "gatewayType": "distributed",
        "acls": [{"direction": "to-lport", "action": "allow-stateless"}],
        "natOutgoingPolicyRules": [{"action": "nat"}],
    }));
    assert_eq!(s.spec.protocol, Some(Protocol::Dual));
    assert_eq!(s.spec.gateway_type, Some(GatewayType::Distributed));
    assert_eq!(s.spec.validate(), Ok(()));
}

#[test]
fn unknown_protocol_is_reported_by_field_and_kept_verbatim() {
    let s = subnet(json!({"protocol": "IPv5", "cidrBlock": "10.0.0.0/24"}));
    let err = s.spec.validate().expect_err("IPv5 is no protocol");
    assert_eq!(
        err,
        InvalidField {
            field: "spec.protocol".into(),
            value: "IPv5".into(),
            expected: Protocol::KNOWN,
        }
    );
    assert_eq!(
        err.to_string(),
        r#"spec.protocol: unknown value "IPv5", expected one of: IPv4, IPv6, Dual, Mac"#
    );
    // Nothing stored is lost: writing the object back keeps the user's value.
    let back = serde_json::to_value(&s).expect("encodes");
    assert_eq!(back["spec"]["protocol"], "IPv5");
    assert_eq!(back["spec"]["cidrBlock"], "10.0.0.0/24");
}

#[test]
fn unknown_acl_action_names_its_index() {
    let s = subnet(json!({"acls": [
        {"direction": "to-lport", "action": "drop"},
        {"direction": "from-lport", "action": "allow-all"},
    ]}));
    let err = s.spec.validate().expect_err("allow-all is no ACL action");
    assert_eq!(err.field, "spec.acls[1].action");
    assert_eq!(err.expected, AclAction::KNOWN);
}

#[test]
fn unknown_gateway_type_is_reported() {
    let s = subnet(json!({"gatewayType": "Centralized"}));
    let err = s
        .spec
        .validate()
        .expect_err("enum values are case-sensitive, as in Kube-OVN");
    assert_eq!(err.field, "spec.gatewayType");
    assert_eq!(err.value, "Centralized");
}

#[test]
fn vpc_and_qos_policy_report_their_fields() {
    let vpc: Vpc = serde_json::from_value(json!({
        "apiVersion": "kubeovn.io/v1", "kind": "Vpc", "metadata": {"name": "v"},
        "spec": {"staticRoutes": [{"cidr": "0.0.0.0/0", "nextHopIP": "1.1.1.1", "policy": "policyAny"}]},
    }))
    .expect("decodes");
    let err = vpc
        .spec
        .validate()
        .expect_err("policyAny is no route policy");
    assert_eq!(
        (err.field.as_str(), err.expected),
        ("spec.staticRoutes[0].policy", RoutePolicy::KNOWN)
    );

    let qos: QoSPolicy = serde_json::from_value(json!({
        "apiVersion": "kubeovn.io/v1", "kind": "QoSPolicy", "metadata": {"name": "q"},
        "spec": {"bindingType": "EIP", "bandwidthLimitRules": [{"name": "r", "direction": "both"}]},
    }))
    .expect("decodes");
    let err = qos.spec.validate().expect_err("both is no direction");
    assert_eq!(err.field, "spec.bandwidthLimitRules[0].direction");
}

#[test]
fn fip_and_dnat_ip_types_are_checked() {
    use kube_ovn_api::crd::{NatIpType, OvnDnatRule, OvnFip};
    let fip: OvnFip = serde_json::from_value(json!({
        "apiVersion": "kubeovn.io/v1", "kind": "OvnFip", "metadata": {"name": "f"},
        "spec": {"ovnEip": "e", "ipType": "vip", "ipName": "v", "type": "regional"},
    }))
    .expect("decodes");
    assert_eq!(fip.spec.ip_type, Some(NatIpType::Vip));
    let err = fip.spec.validate().expect_err("regional is no FIP type");
    assert_eq!(
        (err.field.as_str(), err.value.as_str()),
        ("spec.type", "regional")
    );

    let dnat: OvnDnatRule = serde_json::from_value(json!({
        "apiVersion": "kubeovn.io/v1", "kind": "OvnDnatRule", "metadata": {"name": "d"},
        "spec": {"ovnEip": "e", "ipType": "pod", "ipName": "p"},
    }))
    .expect("decodes");
    let err = dnat.spec.validate().expect_err("pod is no ipType");
    assert_eq!(
        (err.field.as_str(), err.expected),
        ("spec.ipType", NatIpType::KNOWN)
    );
}

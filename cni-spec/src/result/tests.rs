//! Conversion between every pair of versions, and golden JSON for the reference rules.

use std::collections::BTreeSet;

use super::*;
use crate::version::{CniVersion, ResultLayout, ALL_VERSIONS};

/// A 1.1.0 result with two addresses of each family, routes of both families with 1.1
/// attributes, two interfaces and DNS.
fn rich_v1() -> V1Result {
    serde_json::from_str(
        r#"{"cniVersion":"1.1.0",
        "interfaces":[{"name":"veth1","mac":"aa:aa:aa:aa:aa:aa","mtu":1400},
          {"name":"eth0","mac":"bb:bb:bb:bb:bb:bb","mtu":1400,"sandbox":"/run/netns/x",
           "socketPath":"/s","pciID":"0000:00:01.0"}],
        "ips":[{"interface":1,"address":"10.1.0.5/16","gateway":"10.1.0.1"},
          {"interface":1,"address":"fd00::5/64","gateway":"fd00::1"},
          {"interface":1,"address":"10.2.0.5/16"},
          {"interface":1,"address":"fd01::5/64"}],
        "routes":[{"dst":"0.0.0.0/0","gw":"10.1.0.1","mtu":1300,"advmss":1200,
           "priority":5,"table":100,"scope":0},
          {"dst":"::/0"},{"dst":"192.168.0.0/16","gw":"10.1.0.254"}],
        "dns":{"nameservers":["10.1.0.1"],"domain":"cluster.local","search":["svc"],
          "options":["ndots:5"]}}"#,
    )
    .unwrap()
}

fn sample(version: CniVersion) -> CniResult {
    let v1 = CniResult::V1(rich_v1());
    v1.convert_to(version).unwrap()
}

fn addresses(r: &CniResult) -> BTreeSet<String> {
    match r {
        CniResult::Legacy(l) => [&l.ip4, &l.ip6]
            .into_iter()
            .flatten()
            .map(|c| c.ip.to_string())
            .collect(),
        CniResult::Rich(x) => x.ips.iter().map(|i| i.address.to_string()).collect(),
        CniResult::V1(x) => x.ips.iter().map(|i| i.address.to_string()).collect(),
    }
}

#[test]
fn every_pair_converts_and_round_trips() {
    for from in ALL_VERSIONS {
        let source = sample(from);
        assert_eq!(source.version(), from);
        for to in ALL_VERSIONS {
            let converted = source
                .convert_to(to)
                .unwrap_or_else(|e| panic!("{from} -> {to}: {e}"));
            assert_eq!(converted.version(), to, "{from} -> {to}");
            let layout_ok = matches!(
                (&converted, to.result_layout()),
                (CniResult::Legacy(_), ResultLayout::Legacy)
                    | (CniResult::Rich(_), ResultLayout::Rich)
                    | (CniResult::V1(_), ResultLayout::V1)
            );
            assert!(layout_ok, "{from} -> {to} has the wrong layout");
            // What a legacy result holds (one address per family) always survives.
            let expected: BTreeSet<String> = if from.result_layout() == ResultLayout::Legacy
                || to.result_layout() == ResultLayout::Legacy
            {
                ["10.1.0.5/16", "fd00::5/64"].map(String::from).into()
            } else {
                addresses(&sample(CniVersion::V1_1_0))
            };
            assert_eq!(addresses(&converted), expected, "{from} -> {to}");
            let reparsed = CniResult::from_slice(converted.to_json().as_bytes()).unwrap();
            assert_eq!(reparsed, converted, "{from} -> {to} JSON round trip");
            assert_eq!(
                converted.to_value()["dns"]["domain"],
                "cluster.local",
                "{from} -> {to} keeps DNS"
            );
        }
    }
}

#[test]
fn down_to_legacy_keeps_first_of_each_family_and_splits_routes() {
    let CniResult::Legacy(l) = sample(CniVersion::V0_2_0) else {
        panic!("0.2.0 is legacy")
    };
    let json = serde_json::to_value(&l).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"cniVersion":"0.2.0",
            "ip4":{"ip":"10.1.0.5/16","gateway":"10.1.0.1",
                   "routes":[{"dst":"0.0.0.0/0","gw":"10.1.0.1"},
                             {"dst":"192.168.0.0/16","gw":"10.1.0.254"}]},
            "ip6":{"ip":"fd00::5/64","gateway":"fd00::1","routes":[{"dst":"::/0"}]},
            "dns":{"nameservers":["10.1.0.1"],"domain":"cluster.local","search":["svc"],
                   "options":["ndots:5"]}})
    );
}

#[test]
fn v1_down_to_040_tags_versions_and_keeps_route_attributes() {
    let rich = sample(CniVersion::V0_4_0).to_value();
    assert_eq!(rich["ips"][0]["version"], "4");
    assert_eq!(rich["ips"][1]["version"], "6");
    assert_eq!(rich["ips"][0]["interface"], 1);
    assert_eq!(rich["routes"][0]["priority"], 5);
    assert_eq!(rich["routes"][0]["table"], 100);
    assert!(rich["interfaces"][1].get("mtu").is_none());
    assert!(rich["interfaces"][1].get("pciID").is_none());
    assert_eq!(rich["interfaces"][1]["sandbox"], "/run/netns/x");
    // and 0.4.0 -> 1.0.0 drops `version` again
    let back = sample(CniVersion::V0_4_0)
        .convert_to(CniVersion::V1_0_0)
        .unwrap()
        .to_value();
    assert!(back["ips"][0].get("version").is_none());
}

#[test]
fn legacy_up_to_rich() {
    let legacy = CniResult::from_slice(
        br#"{"cniVersion":"0.1.0","ip4":{"ip":"10.0.0.2/24","gateway":"10.0.0.1",
            "routes":[{"dst":"0.0.0.0/0"}]},"ip6":{"ip":"fd00::2/64"}}"#,
    )
    .unwrap();
    let up = legacy.convert_to(CniVersion::V0_3_1).unwrap();
    assert_eq!(
        up.to_value(),
        serde_json::json!({"cniVersion":"0.3.1",
            "ips":[{"version":"4","address":"10.0.0.2/24","gateway":"10.0.0.1"},
                   {"version":"6","address":"fd00::2/64"}],
            "routes":[{"dst":"0.0.0.0/0"}]})
    );
}

#[test]
fn no_address_cannot_go_to_legacy() {
    let empty = CniResult::V1(V1Result::empty());
    for to in [CniVersion::V0_1_0, CniVersion::V0_2_0] {
        let err = empty.convert_to(to).unwrap_err();
        assert!(err.to_string().contains("no valid IP addresses"), "{err}");
        assert_eq!(
            err,
            ConversionError::NoValidIpAddresses {
                from: CniVersion::V1_1_0,
                to
            }
        );
    }
    let rich_empty = empty.convert_to(CniVersion::V0_4_0).unwrap();
    assert!(rich_empty.convert_to(CniVersion::V0_2_0).is_err());
}

#[test]
fn rich_without_version_tag_uses_address_family() {
    let r = CniResult::from_slice(
        br#"{"cniVersion":"0.3.0","ips":[{"address":"fd00::9/64"},{"address":"10.9.0.9/24"}]}"#,
    )
    .unwrap();
    let CniResult::Legacy(l) = r.convert_to(CniVersion::V0_2_0).unwrap() else {
        panic!("legacy expected")
    };
    assert_eq!(l.ip4.unwrap().ip.to_string(), "10.9.0.9/24");
    assert_eq!(l.ip6.unwrap().ip.to_string(), "fd00::9/64");
}

#[test]
fn parse_errors_are_typed() {
    let err = CniResult::from_slice(br#"{"cniVersion":"0.9.9"}"#).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid CNI result: unknown CNI version \"0.9.9\""
    );
    let err = CniResult::from_slice(b"{not json").unwrap_err();
    assert!(matches!(err, ResultParseError::Json(_)));
    let err = CniResult::from_slice(
        br#"{"cniVersion":"0.4.0","ips":[{"version":"5","address":"1.2.3.4/8"}]}"#,
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("invalid IP version \"5\""),
        "{err}"
    );
    // No cniVersion and no default: 0.1.0, as libcni.
    let r = CniResult::from_slice(br#"{"ip4":{"ip":"10.0.0.2/24"}}"#).unwrap();
    assert_eq!(r.version(), CniVersion::V0_1_0);
}

#[test]
fn empty_dns_is_left_out() {
    let mut r = V1Result::empty();
    r.dns = Some(Dns::default());
    assert_eq!(CniResult::V1(r).to_json(), r#"{"cniVersion":"1.1.0"}"#);
}

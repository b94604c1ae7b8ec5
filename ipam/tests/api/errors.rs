//! Bad input: typed errors naming the offender, and nothing changed.

use ipam::{
    AllocError, AllocationRequest, IpFamily, Ipam, Mac, MacRequest, Owner, PoolSpec, SpecError,
    SubnetSpec,
};

use crate::{at, ipam_with, next, pod, spec};

/// Everything observable about a subnet.
fn snapshot(ipam: &Ipam, subnet: &str) -> impl PartialEq + std::fmt::Debug {
    (
        ipam.allocations(subnet).unwrap(),
        ipam.subnet_usage(subnet).unwrap(),
        ipam.subnet_names(),
    )
}

fn spec_err(cidr: &str, gateway: &str, exclude: &[&str]) -> SpecError {
    let ipam = ipam_with("s", spec("10.0.0.0/24", "", &[]));
    next(&ipam, "s", "a");
    let before = snapshot(&ipam, "s");
    let err = ipam
        .add_or_update_subnet("s", &spec(cidr, gateway, exclude))
        .unwrap_err();
    assert_eq!(snapshot(&ipam, "s"), before, "state changed after {err}");
    let fresh = Ipam::new();
    assert!(fresh
        .add_or_update_subnet("t", &spec(cidr, gateway, exclude))
        .is_err());
    assert!(
        fresh.subnet_names().is_empty(),
        "failed add left a subnet behind"
    );
    err
}

#[test]
fn bad_cidr_is_named() {
    let err = spec_err("10.0.0.0/33", "", &[]);
    assert_eq!(
        err,
        SpecError::InvalidCidr {
            subnet: "s".into(),
            cidr: "10.0.0.0/33".into()
        }
    );
    assert!(err.to_string().contains("10.0.0.0/33"));
    assert!(
        matches!(spec_err("banana", "", &[]), SpecError::InvalidCidr { cidr, .. } if cidr == "banana")
    );
    assert!(matches!(
        spec_err("", "", &[]),
        SpecError::EmptyCidrBlock { .. }
    ));
    assert!(matches!(
        spec_err("10.0.0.0/24,10.1.0.0/24", "", &[]),
        SpecError::DuplicateFamily {
            family: IpFamily::V4,
            ..
        }
    ));
}

#[test]
fn bad_gateway_is_named() {
    for gw in ["10.0.1.1", "fd00::1", "nonsense", "10.0.0.1,10.0.0.2"] {
        let err = spec_err("10.0.0.0/24", gw, &[]);
        assert!(
            matches!(&err, SpecError::InvalidGateway { gateway, .. } if gw.contains(gateway.as_str())),
            "{gw}: {err}"
        );
    }
}

#[test]
fn bad_exclude_is_named() {
    for entry in [
        "10.0.0.x",
        "10.0.0.9..10.0.0.2",
        "10.0.0.1..fd00::1",
        "10.0.0.0/28",
        "1..2",
    ] {
        let err = spec_err("10.0.0.0/24", "", &[entry]);
        assert!(
            matches!(&err, SpecError::InvalidExclude { entry: e, .. } if e == entry),
            "{entry}: {err}"
        );
        assert!(err.to_string().contains(entry));
    }
}

#[test]
fn exclude_fully_outside_is_an_error() {
    for entry in ["10.0.1.5", "10.0.1.0..10.0.2.0", "fd00::5"] {
        let err = spec_err("10.0.0.0/24", "", &["10.0.0.3", entry]);
        assert_eq!(
            err,
            SpecError::ExcludeOutsideCidr {
                subnet: "s".into(),
                entry: entry.into()
            }
        );
    }
}

#[test]
fn bad_mac_is_named() {
    for text in [
        "0a:58:0a",
        "0a:58:0a:00:00:0g",
        "0a:58:0a:00:00:01:02",
        "0a5:8:0a:00:00:01",
    ] {
        let err = text.parse::<Mac>().unwrap_err();
        assert!(
            matches!(&err, AllocError::InvalidMac { mac, .. } if mac == text),
            "{text}"
        );
    }
    let err = Mac::parse_unicast("ff:ff:ff:ff:ff:ff").unwrap_err();
    assert!(err.to_string().contains("ff:ff:ff:ff:ff:ff"));
}

#[test]
fn bad_address_text_is_named() {
    let err = AllocationRequest::parse_addresses("10.0.0.1,10.0.0.300").unwrap_err();
    assert_eq!(
        err,
        AllocError::InvalidAddress {
            value: "10.0.0.300".into()
        }
    );
}

#[test]
fn unknown_subnet_and_pool_are_named() {
    let ipam = ipam_with("s", spec("10.0.0.0/24", "", &[]));
    let req = AllocationRequest::next_free();
    assert_eq!(
        ipam.allocate("nope", &pod("a"), &req).unwrap_err(),
        AllocError::UnknownSubnet {
            subnet: "nope".into()
        }
    );
    assert!(matches!(
        ipam.release("nope", &pod("a")),
        Err(AllocError::UnknownSubnet { .. })
    ));
    assert!(matches!(
        ipam.subnet_usage("nope"),
        Err(AllocError::UnknownSubnet { .. })
    ));
    assert!(matches!(
        ipam.rebuild("nope", []),
        Err(AllocError::UnknownSubnet { .. })
    ));
    assert_eq!(
        ipam.add_or_update_pool("nope", "p", &PoolSpec::default())
            .unwrap_err(),
        SpecError::UnknownSubnet {
            subnet: "nope".into()
        }
    );
    let in_pool = AllocationRequest {
        pool: Some("missing".into()),
        ..AllocationRequest::default()
    };
    assert_eq!(
        ipam.allocate("s", &pod("a"), &in_pool).unwrap_err(),
        AllocError::UnknownPool {
            subnet: "s".into(),
            pool: "missing".into()
        }
    );
    assert!(matches!(
        ipam.delete_pool("s", "missing"),
        Err(SpecError::UnknownPool { .. })
    ));
    assert!(!ipam.delete_subnet("nope"));
}

#[test]
fn failed_allocations_change_nothing() {
    let ipam = ipam_with("s", spec("10.0.0.0/28,fd00::/124", "", &["10.0.0.14"]));
    next(&ipam, "s", "a");
    let mac = ipam.get("s", &pod("a")).unwrap().unwrap().mac.unwrap();
    let before = snapshot(&ipam, "s");
    let owner = Owner::new("default/b", "ovn");
    let bad_requests = [
        at("10.0.0.1"),
        at("10.0.0.2"),
        at("10.0.0.14"),
        at("10.0.1.1"),
        at("10.0.0.5,10.0.0.6"),
        at("10.0.0.5,fd00::2"),
        AllocationRequest {
            mac: MacRequest::Static(mac),
            ..at("10.0.0.5")
        },
    ];
    for req in bad_requests {
        let err = ipam.allocate("s", &owner, &req).unwrap_err();
        assert_eq!(snapshot(&ipam, "s"), before, "state changed after {err}");
    }
}

#[test]
fn invalid_subnet_update_keeps_the_old_subnet() {
    let ipam = ipam_with("s", spec("10.0.0.0/24", "", &["10.0.0.9"]));
    let bad = SubnetSpec {
        exclude_ips: vec!["10.0.0.5".into(), "bogus".into()],
        ..SubnetSpec::new("10.0.0.0/16")
    };
    assert!(ipam.add_or_update_subnet("s", &bad).is_err());
    let usage = ipam.subnet_usage("s").unwrap();
    assert_eq!(
        usage.v4.available_range,
        "10.0.0.2-10.0.0.8,10.0.0.10-10.0.0.254"
    );
}

#[test]
fn failed_dual_stack_request_keeps_the_reuse_order() {
    let ipam = ipam_with("s", spec("10.0.0.0/29,fd00::/125", "", &[]));
    for name in ["a", "b", "c", "d", "e"] {
        next(&ipam, "s", name);
    }
    // IPv4 fresh addresses are used up: 10.0.0.6 is released first.
    ipam.release("s", &pod("e")).unwrap();
    // The IPv4 half would reuse 10.0.0.6, the IPv6 half is taken.
    let err = ipam.allocate("s", &pod("x"), &at("fd00::3")).unwrap_err();
    assert!(matches!(err, AllocError::AddressTaken { .. }), "{err}");
    // Released next, 10.0.0.2 is still reused in address order.
    ipam.release("s", &pod("a")).unwrap();
    let y = next(&ipam, "s", "y");
    assert_eq!(y.v4, Some("10.0.0.2".parse().unwrap()));
}

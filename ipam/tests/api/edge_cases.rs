//! The named edge cases of the issue, one test each.

use std::net::IpAddr;

use ipam::{AllocError, AllocationRequest, IpFamily, Mac, MacRequest};

use crate::{at, ipam_with, next, pod, spec};

#[test]
fn default_gateway_is_first_usable_and_first_allocation_follows_it() {
    let ipam = ipam_with("s", spec("10.0.0.0/24", "", &[]));
    assert_eq!(next(&ipam, "s", "a").ip_address_annotation(), "10.0.0.2");
    let err = ipam.allocate("s", &pod("b"), &at("10.0.0.1")).unwrap_err();
    assert!(matches!(err, AllocError::AddressIsGateway { .. }), "{err}");
    let usage = ipam.subnet_usage("s").unwrap();
    // 254 usable, minus the gateway, minus one in use.
    assert_eq!((usage.v4.available, usage.v4.using), (252, 1));
    assert_eq!(usage.v4.available_range, "10.0.0.3-10.0.0.254");
    assert_eq!(usage.v4.using_range, "10.0.0.2");
}

#[test]
fn explicit_gateway_is_respected() {
    let ipam = ipam_with("s", spec("10.0.0.0/29", "10.0.0.6", &[]));
    assert_eq!(next(&ipam, "s", "a").ip_address_annotation(), "10.0.0.1");
    let usage = ipam.subnet_usage("s").unwrap();
    assert_eq!(usage.v4.available_range, "10.0.0.2-10.0.0.5");
}

#[test]
fn ipv6_subnet_usable_range_excludes_network_and_last() {
    let ipam = ipam_with("s", spec("fd00::/120", "", &[]));
    assert_eq!(next(&ipam, "s", "a").ip_address_annotation(), "fd00::2");
    let usage = ipam.subnet_usage("s").unwrap();
    assert_eq!(usage.v6.available_range, "fd00::3-fd00::fe");
    assert_eq!(usage.v6.available, 252);
    let err = ipam.allocate("s", &pod("b"), &at("fd00::ff")).unwrap_err();
    assert!(matches!(err, AllocError::AddressOutOfRange { .. }), "{err}");
}

#[test]
fn slash_31_has_two_usable_addresses() {
    // RFC 3021: no network or broadcast address on a point-to-point /31.
    let ipam = ipam_with("s", spec("10.0.0.0/31", "", &[]));
    assert_eq!(next(&ipam, "s", "a").ip_address_annotation(), "10.0.0.1");
    let err = ipam.allocate("s", &pod("b"), &at("10.0.0.0")).unwrap_err();
    assert!(matches!(err, AllocError::AddressIsGateway { .. }), "{err}");
    // The gateway may be the other end instead.
    let ipam = ipam_with("t", spec("10.0.0.0/31", "10.0.0.1", &[]));
    assert_eq!(next(&ipam, "t", "a").ip_address_annotation(), "10.0.0.0");
}

#[test]
fn slash_32_is_the_one_host() {
    let ipam = ipam_with("s", spec("10.0.0.7/32", "", &[]));
    let usage = ipam.subnet_usage("s").unwrap();
    assert_eq!((usage.v4.available, usage.v4.using), (0, 0));
    let err = ipam.allocate("s", &pod("a"), &at("10.0.0.7")).unwrap_err();
    assert!(matches!(err, AllocError::AddressIsGateway { .. }), "{err}");
    let err = ipam
        .allocate("s", &pod("a"), &AllocationRequest::next_free())
        .unwrap_err();
    assert!(
        matches!(
            err,
            AllocError::Exhausted {
                family: IpFamily::V4,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn slash_127_and_128_follow_v4_point_to_point_rules() {
    let ipam = ipam_with("s", spec("fd00::/127", "", &[]));
    assert_eq!(next(&ipam, "s", "a").ip_address_annotation(), "fd00::1");
    let ipam = ipam_with("t", spec("fd00::9/128", "", &[]));
    let err = ipam.allocate("t", &pod("a"), &at("fd00::9")).unwrap_err();
    assert!(matches!(err, AllocError::AddressIsGateway { .. }), "{err}");
}

#[test]
fn host_bits_in_cidr_are_cleared() {
    let ipam = ipam_with("s", spec("10.0.0.77/24", "", &[]));
    assert_eq!(next(&ipam, "s", "a").ip_address_annotation(), "10.0.0.2");
}

#[test]
fn excludes_mix_single_ranges_and_families_and_clip_partial_ranges() {
    let ipam = ipam_with(
        "s",
        spec(
            "10.0.0.0/28,fd00::/124",
            "",
            &[
                "10.0.0.6..10.0.0.8",
                "10.0.0.12..10.0.1.200",
                "fd00::2",
                "10.0.0.10",
            ],
        ),
    );
    let usage = ipam.subnet_usage("s").unwrap();
    assert_eq!(
        usage.v4.available_range,
        "10.0.0.2-10.0.0.5,10.0.0.9,10.0.0.11"
    );
    assert_eq!(usage.v6.available_range, "fd00::3-fd00::e");
    assert_eq!(usage.v4.available, 6);
    let a = next(&ipam, "s", "a");
    assert_eq!(a.ip_address_annotation(), "10.0.0.2,fd00::3");
}

#[test]
fn excluded_address_is_refused_unless_allowed() {
    let ipam = ipam_with("s", spec("10.0.0.0/24", "", &["10.0.0.5"]));
    let err = ipam.allocate("s", &pod("a"), &at("10.0.0.5")).unwrap_err();
    assert!(matches!(err, AllocError::AddressExcluded { .. }), "{err}");
    let mut req = at("10.0.0.5");
    req.allow_excluded = true;
    let a = ipam.allocate("s", &pod("a"), &req).unwrap();
    assert_eq!(a.ip_address_annotation(), "10.0.0.5");
    // Released, an excluded address does not become available.
    ipam.release("s", &pod("a")).unwrap();
    let usage = ipam.subnet_usage("s").unwrap();
    assert_eq!(
        usage.v4.available_range,
        "10.0.0.2-10.0.0.4,10.0.0.6-10.0.0.254"
    );
}

#[test]
fn static_address_errors_are_distinct() {
    let ipam = ipam_with("s", spec("10.0.0.0/24", "", &[]));
    ipam.allocate("s", &pod("a"), &at("10.0.0.9")).unwrap();
    let taken = ipam.allocate("s", &pod("b"), &at("10.0.0.9")).unwrap_err();
    assert_eq!(
        taken,
        AllocError::AddressTaken {
            subnet: "s".into(),
            address: "10.0.0.9".parse().unwrap(),
            owner: pod("a"),
        }
    );
    for outside in ["10.0.1.1", "10.0.0.0", "10.0.0.255", "fd00::1"] {
        let err = ipam.allocate("s", &pod("b"), &at(outside)).unwrap_err();
        assert!(
            matches!(err, AllocError::AddressOutOfRange { .. }),
            "{outside}: {err}"
        );
    }
}

#[test]
fn static_allocation_skips_nothing_for_later_automatic_ones() {
    let ipam = ipam_with("s", spec("10.0.0.0/29", "", &[]));
    ipam.allocate("s", &pod("a"), &at("10.0.0.2")).unwrap();
    assert_eq!(next(&ipam, "s", "b").ip_address_annotation(), "10.0.0.3");
}

#[test]
fn same_owner_gets_same_allocation() {
    let ipam = ipam_with("s", spec("10.0.0.0/24,fd00::/120", "", &[]));
    let first = next(&ipam, "s", "a");
    next(&ipam, "s", "b");
    assert_eq!(next(&ipam, "s", "a"), first);
    // Same NIC of another pod, or another NIC of the same pod, differs.
    let other_nic = ipam
        .allocate(
            "s",
            &ipam::Owner::new("default/a", "eth1"),
            &AllocationRequest::next_free(),
        )
        .unwrap();
    assert_ne!(other_nic.v4, first.v4);
}

#[test]
fn re_asking_with_a_new_static_address_moves_the_owner() {
    let ipam = ipam_with("s", spec("10.0.0.0/24", "", &[]));
    next(&ipam, "s", "a");
    let moved = ipam.allocate("s", &pod("a"), &at("10.0.0.50")).unwrap();
    assert_eq!(moved.ip_address_annotation(), "10.0.0.50");
    assert_eq!(
        ipam.owner_of("s", "10.0.0.2".parse().unwrap()).unwrap(),
        None
    );
    assert_eq!(ipam.subnet_usage("s").unwrap().v4.using, 1);
}

#[test]
fn generated_macs_are_local_unicast_and_unique() {
    let ipam = ipam_with("s", spec("10.0.0.0/20", "", &[]));
    let mut seen = std::collections::HashSet::new();
    for i in 0..2000 {
        let mac = next(&ipam, "s", &format!("p{i}")).mac.unwrap();
        assert!(mac.is_local() && !mac.is_multicast(), "{mac}");
        assert!(seen.insert(mac), "duplicate {mac}");
    }
}

#[test]
fn requested_mac_is_used_and_conflicts_are_refused() {
    let ipam = ipam_with("s", spec("10.0.0.0/24", "", &[]));
    let mac = Mac::parse_unicast("0a:58:0a:00:00:09").unwrap();
    let req = AllocationRequest {
        mac: MacRequest::Static(mac),
        ..AllocationRequest::default()
    };
    assert_eq!(ipam.allocate("s", &pod("a"), &req).unwrap().mac, Some(mac));
    // The same owner may ask again.
    assert_eq!(ipam.allocate("s", &pod("a"), &req).unwrap().mac, Some(mac));
    let err = ipam.allocate("s", &pod("b"), &req).unwrap_err();
    assert_eq!(
        err,
        AllocError::MacTaken {
            subnet: "s".into(),
            mac,
            owner: pod("a")
        }
    );
    let none = AllocationRequest {
        mac: MacRequest::None,
        ..AllocationRequest::default()
    };
    assert_eq!(ipam.allocate("s", &pod("c"), &none).unwrap().mac, None);
}

#[test]
fn dual_stack_allocates_both_families_with_one_mac() {
    let ipam = ipam_with("s", spec("10.0.0.0/24,fd00::/120", "", &[]));
    let a = next(&ipam, "s", "a");
    assert_eq!(a.ip_address_annotation(), "10.0.0.2,fd00::2");
    assert!(a.mac.is_some());
    // A static v4 address gets an automatic v6 one.
    let b = ipam.allocate("s", &pod("b"), &at("10.0.0.100")).unwrap();
    assert_eq!(b.ip_address_annotation(), "10.0.0.100,fd00::3");
}

#[test]
fn dual_stack_is_both_or_neither() {
    // fd00::/126 has ::1 (gateway) and ::2 usable: one v6 allocation.
    let ipam = ipam_with("s", spec("10.0.0.0/24,fd00::/126", "", &[]));
    next(&ipam, "s", "a");
    let before = ipam.subnet_usage("s").unwrap();
    let err = ipam
        .allocate("s", &pod("b"), &AllocationRequest::next_free())
        .unwrap_err();
    assert!(
        matches!(
            err,
            AllocError::Exhausted {
                family: IpFamily::V6,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(ipam.subnet_usage("s").unwrap(), before);
    // A static pair with a taken v6 half does not take the v4 half.
    let err = ipam
        .allocate("s", &pod("b"), &at("10.0.0.9,fd00::2"))
        .unwrap_err();
    assert!(matches!(err, AllocError::AddressTaken { .. }), "{err}");
    assert_eq!(
        ipam.owner_of("s", "10.0.0.9".parse().unwrap()).unwrap(),
        None
    );
    assert_eq!(ipam.subnet_usage("s").unwrap(), before);
}

#[test]
fn released_address_is_reused_only_after_unused_ones_run_out() {
    // Usable .1-.6, gateway .1: five addresses.
    let ipam = ipam_with("s", spec("10.0.0.0/29", "", &[]));
    let a = next(&ipam, "s", "a");
    assert_eq!(a.ip_address_annotation(), "10.0.0.2");
    assert_eq!(ipam.release("s", &pod("a")).unwrap(), Some(a));
    assert_eq!(ipam.release("s", &pod("a")).unwrap(), None);
    let got: Vec<String> = ["b", "c", "d", "e", "f"]
        .iter()
        .map(|n| next(&ipam, "s", n).ip_address_annotation())
        .collect();
    assert_eq!(
        got,
        ["10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6", "10.0.0.2"]
    );
    let err = ipam
        .allocate("s", &pod("g"), &AllocationRequest::next_free())
        .unwrap_err();
    assert!(matches!(err, AllocError::Exhausted { .. }), "{err}");
}

#[test]
fn released_address_may_be_requested_statically_at_once() {
    let ipam = ipam_with("s", spec("10.0.0.0/29", "", &[]));
    next(&ipam, "s", "a");
    ipam.release("s", &pod("a")).unwrap();
    let b = ipam.allocate("s", &pod("b"), &at("10.0.0.2")).unwrap();
    assert_eq!(b.ip_address_annotation(), "10.0.0.2");
}

#[test]
fn usage_serialises_with_kube_ovn_field_names() {
    let ipam = ipam_with(
        "s",
        spec("10.0.0.0/28,fd00::/124", "", &["10.0.0.6..10.0.0.8"]),
    );
    for i in 0..4 {
        next(&ipam, "s", &format!("p{i}"));
    }
    ipam.release("s", &pod("p1")).unwrap();
    let json = serde_json::to_value(ipam.subnet_usage("s").unwrap().subnet_status()).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "v4availableIPs": 7,
            "v4availableIPrange": "10.0.0.3,10.0.0.9-10.0.0.14",
            "v4usingIPs": 3,
            "v4usingIPrange": "10.0.0.2,10.0.0.4-10.0.0.5",
            "v6availableIPs": 10,
            "v6availableIPrange": "fd00::3,fd00::6-fd00::e",
            "v6usingIPs": 3,
            "v6usingIPrange": "fd00::2,fd00::4-fd00::5",
        })
    );
}

#[test]
fn huge_ipv6_subnet_counts_do_not_overflow() {
    let ipam = ipam_with("s", spec("::/0", "", &[]));
    let usage = ipam.subnet_usage("s").unwrap();
    // 2^128 addresses minus network, last and gateway.
    assert_eq!(usage.v6.available, u128::MAX - 2);
    let a = next(&ipam, "s", "a");
    assert_eq!(
        a.address(IpFamily::V6),
        Some("::2".parse::<IpAddr>().unwrap())
    );
}

//! Named IP pools inside a subnet.

use ipam::{AllocError, AllocationRequest, PoolSpec, SpecError};

use crate::{ipam_with, next, pod, spec};

fn pool(entries: &[&str]) -> PoolSpec {
    PoolSpec {
        ips: entries.iter().map(|s| s.to_string()).collect(),
    }
}

fn from_pool(name: &str) -> AllocationRequest {
    AllocationRequest {
        pool: Some(name.into()),
        ..AllocationRequest::default()
    }
}

#[test]
fn pool_addresses_are_carved_out_of_the_default_pool() {
    let ipam = ipam_with("s", spec("10.0.0.0/24,fd00::/120", "", &[]));
    ipam.add_or_update_pool("s", "web", &pool(&["10.0.0.2..10.0.0.5", "fd00::10/126"]))
        .unwrap();
    let a = ipam.allocate("s", &pod("a"), &from_pool("web")).unwrap();
    assert_eq!(a.ip_address_annotation(), "10.0.0.2,fd00::10");
    // The default pool skips the named pool's addresses.
    assert_eq!(
        next(&ipam, "s", "b").ip_address_annotation(),
        "10.0.0.6,fd00::2"
    );
    let web = ipam.pool_usage("s", "web").unwrap().pool_status();
    let json = serde_json::to_value(&web).unwrap();
    assert_eq!(json["v4AvailableIPRange"], "10.0.0.3-10.0.0.5");
    assert_eq!(json["v4UsingIPs"], 1);
    assert_eq!(json["v6UsingIPRange"], "fd00::10");
    assert_eq!(json["v6AvailableIPs"], 3);
    let default = ipam.pool_usage("s", "").unwrap();
    assert_eq!(default.v4.using_range, "10.0.0.6");
    assert_eq!(
        ipam.subnet_usage("s").unwrap().v4.using_range,
        "10.0.0.2,10.0.0.6"
    );
}

#[test]
fn pool_exhaustion_does_not_spill_into_other_pools() {
    let ipam = ipam_with("s", spec("10.0.0.0/24", "", &[]));
    ipam.add_or_update_pool("s", "tiny", &pool(&["10.0.0.100"]))
        .unwrap();
    ipam.allocate("s", &pod("a"), &from_pool("tiny")).unwrap();
    let err = ipam
        .allocate("s", &pod("b"), &from_pool("tiny"))
        .unwrap_err();
    assert!(
        matches!(err, AllocError::Exhausted { ref pool, .. } if pool == "tiny"),
        "{err}"
    );
}

#[test]
fn static_address_must_lie_in_the_named_pool() {
    let ipam = ipam_with("s", spec("10.0.0.0/24", "", &[]));
    ipam.add_or_update_pool("s", "p", &pool(&["10.0.0.10..10.0.0.20"]))
        .unwrap();
    let mut req = from_pool("p");
    req.addresses = vec!["10.0.0.30".parse().unwrap()];
    let err = ipam.allocate("s", &pod("a"), &req).unwrap_err();
    assert!(matches!(err, AllocError::AddressNotInPool { .. }), "{err}");
    req.addresses = vec!["10.0.0.15".parse().unwrap()];
    assert_eq!(
        ipam.allocate("s", &pod("a"), &req)
            .unwrap()
            .ip_address_annotation(),
        "10.0.0.15"
    );
}

#[test]
fn overlapping_pools_are_refused() {
    let ipam = ipam_with("s", spec("10.0.0.0/24", "", &[]));
    ipam.add_or_update_pool("s", "a", &pool(&["10.0.0.0/28"]))
        .unwrap();
    let err = ipam
        .add_or_update_pool("s", "b", &pool(&["10.0.0.15..10.0.0.20"]))
        .unwrap_err();
    assert_eq!(
        err,
        SpecError::PoolOverlap {
            subnet: "s".into(),
            pool: "b".into(),
            other: "a".into()
        }
    );
    // Updating a pool may overlap its own old range.
    ipam.add_or_update_pool("s", "a", &pool(&["10.0.0.8/29"]))
        .unwrap();
}

#[test]
fn bad_pool_entries_are_named() {
    let ipam = ipam_with("s", spec("10.0.0.0/24", "", &[]));
    let err = ipam
        .add_or_update_pool("s", "p", &pool(&["10.0.1.0/24"]))
        .unwrap_err();
    assert!(
        matches!(err, SpecError::PoolEntryOutsideCidr { ref entry, .. } if entry == "10.0.1.0/24")
    );
    let err = ipam
        .add_or_update_pool("s", "p", &pool(&["x..y"]))
        .unwrap_err();
    assert!(matches!(err, SpecError::InvalidPoolEntry { ref entry, .. } if entry == "x..y"));
    let err = ipam
        .add_or_update_pool("s", "", &pool(&["10.0.0.5"]))
        .unwrap_err();
    assert!(matches!(err, SpecError::EmptyPoolName { .. }));
    assert!(ipam.pool_usage("s", "p").is_err());
}

#[test]
fn deleting_a_pool_returns_its_addresses_and_keeps_allocations() {
    let ipam = ipam_with("s", spec("10.0.0.0/29", "", &[]));
    ipam.add_or_update_pool("s", "p", &pool(&["10.0.0.2..10.0.0.4"]))
        .unwrap();
    ipam.allocate("s", &pod("a"), &from_pool("p")).unwrap();
    assert_eq!(next(&ipam, "s", "b").ip_address_annotation(), "10.0.0.5");
    ipam.delete_pool("s", "p").unwrap();
    assert_eq!(
        ipam.subnet_usage("s").unwrap().v4.using_range,
        "10.0.0.2,10.0.0.5"
    );
    assert_eq!(next(&ipam, "s", "c").ip_address_annotation(), "10.0.0.3");
}

#[test]
fn pool_follows_subnet_excludes() {
    let ipam = ipam_with("s", spec("10.0.0.0/24", "", &[]));
    ipam.add_or_update_pool("s", "p", &pool(&["10.0.0.10..10.0.0.12"]))
        .unwrap();
    ipam.add_or_update_subnet("s", &spec("10.0.0.0/24", "", &["10.0.0.10"]))
        .unwrap();
    let usage = ipam.pool_usage("s", "p").unwrap();
    assert_eq!(usage.v4.available_range, "10.0.0.11-10.0.0.12");
}

#[test]
fn static_addresses_in_a_pool_interleave_with_automatic_ones() {
    let ipam = ipam_with("s", spec("10.0.0.0/24", "", &[]));
    ipam.add_or_update_pool("s", "p", &pool(&["10.0.0.10..10.0.0.13"]))
        .unwrap();
    // A static address of the pool, requested without naming it.
    let held = ipam
        .allocate("s", &pod("st"), &crate::at("10.0.0.11"))
        .unwrap();
    assert_eq!(held.ip_address_annotation(), "10.0.0.11");
    let usage = ipam.pool_usage("s", "p").unwrap().v4;
    assert_eq!(usage.available, 3);
    assert_eq!(usage.available_range, "10.0.0.10,10.0.0.12-10.0.0.13");
    let take = |name: &str| {
        ipam.allocate("s", &pod(name), &from_pool("p"))
            .map(|a| a.ip_address_annotation())
    };
    assert_eq!(take("a").unwrap(), "10.0.0.10");
    // The static address is skipped.
    assert_eq!(take("b").unwrap(), "10.0.0.12");
    // Released, it waits for the never-used addresses to run out.
    ipam.release("s", &pod("st")).unwrap();
    assert_eq!(
        ipam.pool_usage("s", "p").unwrap().v4.available_range,
        "10.0.0.11,10.0.0.13"
    );
    assert_eq!(take("c").unwrap(), "10.0.0.13");
    assert_eq!(take("d").unwrap(), "10.0.0.11");
    assert!(matches!(take("e"), Err(AllocError::Exhausted { .. })));
    // Taken again statically after its release, then released: still free
    // exactly once.
    ipam.release("s", &pod("d")).unwrap();
    ipam.allocate("s", &pod("st"), &crate::at("10.0.0.11"))
        .unwrap();
    assert!(matches!(take("e"), Err(AllocError::Exhausted { .. })));
    ipam.release("s", &pod("st")).unwrap();
    let usage = ipam.pool_usage("s", "p").unwrap().v4;
    assert_eq!((usage.available, usage.using), (1, 3));
    assert_eq!(take("e").unwrap(), "10.0.0.11");
    assert!(matches!(take("f"), Err(AllocError::Exhausted { .. })));
}

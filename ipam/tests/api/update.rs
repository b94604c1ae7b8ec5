//! Updating a subnet keeps live allocations that stay valid.

use std::collections::BTreeSet;

use ipam::{InvalidReason, Invalidated, SubnetSpec};

use crate::{at, ipam_with, next, pod, spec};

fn invalidated(list: Vec<Invalidated>) -> BTreeSet<(String, String, String)> {
    list.into_iter()
        .map(|i| {
            (
                i.owner.pod.to_string(),
                i.address.to_string(),
                format!("{:?}", i.reason),
            )
        })
        .collect()
}

#[test]
fn new_excludes_invalidate_only_covered_addresses() {
    let ipam = ipam_with("s", spec("10.0.0.0/24", "", &[]));
    for n in ["a", "b", "c"] {
        next(&ipam, "s", n);
    }
    let update = ipam
        .add_or_update_subnet("s", &spec("10.0.0.0/24", "", &["10.0.0.3"]))
        .unwrap();
    assert!(!update.created);
    assert_eq!(
        invalidated(update.invalidated),
        BTreeSet::from([("default/b".into(), "10.0.0.3".into(), "Excluded".into())])
    );
    assert_eq!(ipam.get("s", &pod("b")).unwrap(), None);
    assert_eq!(
        ipam.subnet_usage("s").unwrap().v4.using_range,
        "10.0.0.2,10.0.0.4"
    );
}

#[test]
fn statically_allowed_excluded_address_survives_updates() {
    let ipam = ipam_with("s", spec("10.0.0.0/24", "", &["10.0.0.9"]));
    let mut req = at("10.0.0.9");
    req.allow_excluded = true;
    ipam.allocate("s", &pod("a"), &req).unwrap();
    let update = ipam
        .add_or_update_subnet("s", &spec("10.0.0.0/24", "", &["10.0.0.8..10.0.0.10"]))
        .unwrap();
    assert!(update.invalidated.is_empty());
}

#[test]
fn shrinking_the_cidr_invalidates_addresses_outside() {
    let ipam = ipam_with("s", spec("10.0.0.0/24", "", &[]));
    ipam.allocate("s", &pod("a"), &at("10.0.0.5")).unwrap();
    ipam.allocate("s", &pod("b"), &at("10.0.0.200")).unwrap();
    ipam.allocate("s", &pod("c"), &at("10.0.0.127")).unwrap();
    let update = ipam
        .add_or_update_subnet("s", &SubnetSpec::new("10.0.0.0/25"))
        .unwrap();
    assert_eq!(
        invalidated(update.invalidated),
        BTreeSet::from([
            ("default/b".into(), "10.0.0.200".into(), "OutOfRange".into()),
            // The old usable address .127 is the new broadcast address.
            ("default/c".into(), "10.0.0.127".into(), "OutOfRange".into()),
        ])
    );
    assert!(ipam.get("s", &pod("a")).unwrap().is_some());
}

#[test]
fn growing_the_cidr_keeps_everything_and_adds_space() {
    let ipam = ipam_with("s", spec("10.0.0.0/30", "", &[]));
    next(&ipam, "s", "a");
    let update = ipam
        .add_or_update_subnet("s", &SubnetSpec::new("10.0.0.0/16"))
        .unwrap();
    assert!(update.invalidated.is_empty());
    let usage = ipam.subnet_usage("s").unwrap();
    assert_eq!((usage.v4.using, usage.v4.available), (1, 65532));
    // .3 was the old broadcast and is now usable.
    assert_eq!(next(&ipam, "s", "b").ip_address_annotation(), "10.0.0.3");
}

#[test]
fn new_gateway_on_a_live_address_is_reported() {
    let ipam = ipam_with("s", spec("10.0.0.0/24", "", &[]));
    next(&ipam, "s", "a");
    let update = ipam
        .add_or_update_subnet("s", &spec("10.0.0.0/24", "10.0.0.2", &[]))
        .unwrap();
    assert_eq!(update.invalidated[0].reason, InvalidReason::Gateway);
    // The old gateway is now an ordinary address.
    assert_eq!(next(&ipam, "s", "b").ip_address_annotation(), "10.0.0.1");
}

#[test]
fn dropping_a_family_keeps_the_other_half() {
    let ipam = ipam_with("s", spec("10.0.0.0/24,fd00::/120", "", &[]));
    let a = next(&ipam, "s", "a");
    let update = ipam
        .add_or_update_subnet("s", &SubnetSpec::new("10.0.0.0/24"))
        .unwrap();
    assert_eq!(update.invalidated[0].reason, InvalidReason::FamilyRemoved);
    let now = ipam.get("s", &pod("a")).unwrap().unwrap();
    assert_eq!((now.v4, now.v6, now.mac), (a.v4, None, a.mac));
    // Going dual again, asking again fills in the missing family only.
    ipam.add_or_update_subnet("s", &SubnetSpec::new("10.0.0.0/24,fd00::/120"))
        .unwrap();
    let again = next(&ipam, "s", "a");
    assert_eq!((again.v4, again.mac), (a.v4, a.mac));
    assert!(again.v6.is_some());
}

#[test]
fn delete_subnet_forgets_everything() {
    let ipam = ipam_with("s", spec("10.0.0.0/24", "", &[]));
    next(&ipam, "s", "a");
    assert!(ipam.delete_subnet("s"));
    ipam.add_or_update_subnet("s", &SubnetSpec::new("10.0.0.0/24"))
        .unwrap();
    assert_eq!(ipam.get("s", &pod("a")).unwrap(), None);
}

//! Rebuilding allocations from what the cluster records.

use ipam::{
    AllocError, AllocationRequest, ExistingAllocation, Ipam, Mac, Owner, RebuildProblem, Rejected,
};

use crate::{ipam_with, next, pod, spec};

fn existing(name: &str, addrs: &str, mac: Option<&str>) -> ExistingAllocation {
    ExistingAllocation {
        owner: pod(name),
        addresses: AllocationRequest::parse_addresses(addrs).unwrap(),
        mac: mac.map(|m| m.parse::<Mac>().unwrap()),
    }
}

#[test]
fn rebuild_loads_allocations_and_later_allocations_skip_them() {
    let ipam = ipam_with("s", spec("10.0.0.0/24,fd00::/120", "", &[]));
    next(&ipam, "s", "forgotten");
    let report = ipam
        .rebuild(
            "s",
            [
                existing("a", "10.0.0.2,fd00::2", Some("0a:00:00:00:00:01")),
                existing("b", "10.0.0.3,fd00::5", None),
            ],
        )
        .unwrap();
    assert_eq!((report.loaded, report.rejected.len()), (2, 0));
    assert_eq!(ipam.get("s", &pod("forgotten")).unwrap(), None);
    let a = ipam.get("s", &pod("a")).unwrap().unwrap();
    assert_eq!(a.mac.unwrap().to_string(), "0a:00:00:00:00:01");
    // Re-asking returns the rebuilt allocation.
    assert_eq!(next(&ipam, "s", "a"), a);
    assert_eq!(
        next(&ipam, "s", "c").ip_address_annotation(),
        "10.0.0.4,fd00::3"
    );
}

#[test]
fn conflicting_entries_are_reported_not_merged() {
    let ipam = ipam_with("s", spec("10.0.0.0/24,fd00::/120", "", &[]));
    let report = ipam
        .rebuild(
            "s",
            [
                existing("a", "10.0.0.2,fd00::2", Some("0a:00:00:00:00:01")),
                existing("b", "10.0.0.9,fd00::2", None),
                existing("c", "10.0.0.10", Some("0a:00:00:00:00:01")),
                existing("a", "10.0.0.11", None),
                existing("d", "10.0.0.1", None),
                existing("e", "10.1.0.1", None),
            ],
        )
        .unwrap();
    assert_eq!(report.loaded, 1);
    let problems: Vec<(String, RebuildProblem)> = report
        .rejected
        .into_iter()
        .map(|Rejected { owner, problem }| (owner.pod.to_string(), problem))
        .collect();
    assert_eq!(
        problems[0],
        (
            "default/b".into(),
            RebuildProblem::AddressConflict {
                address: "fd00::2".parse().unwrap(),
                kept: pod("a")
            }
        )
    );
    assert!(matches!(problems[1].1, RebuildProblem::MacConflict { .. }));
    assert_eq!(problems[2].1, RebuildProblem::DuplicateOwner);
    assert!(matches!(
        problems[3].1,
        RebuildProblem::Invalid(AllocError::AddressIsGateway { .. })
    ));
    assert!(matches!(
        problems[4].1,
        RebuildProblem::Invalid(AllocError::AddressOutOfRange { .. })
    ));
    // The refused entries hold nothing, not even the uncontested half.
    assert_eq!(
        ipam.owner_of("s", "10.0.0.9".parse().unwrap()).unwrap(),
        None
    );
    assert_eq!(ipam.subnet_usage("s").unwrap().v4.using_range, "10.0.0.2");
}

#[test]
fn rebuild_accepts_excluded_addresses_already_handed_out() {
    let ipam = ipam_with("s", spec("10.0.0.0/24", "", &["10.0.0.5"]));
    let report = ipam
        .rebuild("s", [existing("a", "10.0.0.5", None)])
        .unwrap();
    assert_eq!(report.loaded, 1);
    assert_eq!(
        ipam.owner_of("s", "10.0.0.5".parse().unwrap()).unwrap(),
        Some(pod("a"))
    );
}

#[test]
fn rebuild_of_many_allocations_counts_right() {
    let ipam = Ipam::new();
    ipam.add_or_update_subnet("s", &spec("10.0.0.0/16", "", &[]))
        .unwrap();
    let entries = (0..5000u32).map(|i| ExistingAllocation {
        owner: Owner::new(format!("ns/p{i}"), "ovn"),
        addresses: vec![std::net::Ipv4Addr::from(0x0a00_0002 + i * 2).into()],
        mac: None,
    });
    let report = ipam.rebuild("s", entries).unwrap();
    assert_eq!(report.loaded, 5000);
    let usage = ipam.subnet_usage("s").unwrap();
    assert_eq!(usage.v4.using, 5000);
    assert_eq!(usage.v4.available, 65534 - 1 - 5000);
    // The gaps between rebuilt addresses are handed out first, lowest first.
    assert_eq!(next(&ipam, "s", "new").ip_address_annotation(), "10.0.0.3");
}

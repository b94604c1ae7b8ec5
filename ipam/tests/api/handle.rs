//! Subnet handles: the same answers as the by-name calls, and an end when
//! their subnet is deleted.

use ipam::{AllocError, AllocationRequest, Ipam, SubnetSpec};

use crate::pod;

#[test]
fn handle_and_name_share_one_subnet() {
    let ipam = crate::ipam_with("s", SubnetSpec::new("10.1.0.0/24"));
    let handle = ipam.subnet("s").unwrap();
    assert_eq!(handle.name(), "s");
    let a = handle
        .allocate(&pod("a"), &AllocationRequest::next_free())
        .unwrap();
    assert_eq!(a.ip_address_annotation(), "10.1.0.2");
    // Seen by name, and the other way round.
    assert_eq!(ipam.get("s", &pod("a")).unwrap(), Some(a));
    let b = ipam
        .allocate("s", &pod("b"), &AllocationRequest::next_free())
        .unwrap();
    assert_eq!(handle.get(&pod("b")).unwrap(), Some(b));
    assert_eq!(b.ip_address_annotation(), "10.1.0.3");
    assert_eq!(handle.release(&pod("b")).unwrap(), Some(b));
    assert_eq!(ipam.get("s", &pod("b")).unwrap(), None);
    assert_eq!(handle.release(&pod("b")).unwrap(), None);
}

#[test]
fn handle_of_a_deleted_subnet_is_refused_even_after_re_adding_the_name() {
    let ipam = Ipam::new();
    assert!(matches!(
        ipam.subnet("nope"),
        Err(AllocError::UnknownSubnet { subnet }) if subnet == "nope"
    ));
    ipam.add_or_update_subnet("s", &SubnetSpec::new("10.1.0.0/24"))
        .unwrap();
    let stale = ipam.subnet("s").unwrap();
    stale
        .allocate(&pod("a"), &AllocationRequest::next_free())
        .unwrap();
    assert!(ipam.delete_subnet("s"));
    fn refused<T>(r: Result<T, AllocError>) -> bool {
        matches!(r, Err(AllocError::UnknownSubnet { subnet }) if subnet == "s")
    }
    assert!(refused(
        stale.allocate(&pod("b"), &AllocationRequest::next_free())
    ));
    assert!(refused(stale.get(&pod("a"))));
    assert!(refused(stale.release(&pod("a"))));

    ipam.add_or_update_subnet("s", &SubnetSpec::new("10.2.0.0/24"))
        .unwrap();
    assert!(
        refused(stale.get(&pod("a"))),
        "a new subnet, not the old one"
    );
    let fresh = ipam.subnet("s").unwrap();
    let a = fresh
        .allocate(&pod("a"), &AllocationRequest::next_free())
        .unwrap();
    assert_eq!(a.ip_address_annotation(), "10.2.0.2");
}

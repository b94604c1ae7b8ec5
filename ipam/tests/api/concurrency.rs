//! Many workers on one IPAM never hand out one address twice.

use std::collections::HashSet;
use std::sync::Arc;
use std::thread;

use ipam::{AllocationRequest, Ipam, Owner, SubnetSpec};

#[test]
fn parallel_workers_never_share_an_address() {
    let ipam = Arc::new(Ipam::new());
    for s in ["a", "b"] {
        ipam.add_or_update_subnet(
            s,
            &SubnetSpec::new(if s == "a" {
                "10.0.0.0/16"
            } else {
                "10.1.0.0/16,fd00::/112"
            }),
        )
        .unwrap();
    }
    let workers: Vec<_> = (0..8)
        .map(|w| {
            let ipam = ipam.clone();
            thread::spawn(move || {
                let subnet = if w % 2 == 0 { "a" } else { "b" };
                let mut kept = Vec::new();
                for i in 0..600 {
                    let owner = Owner::new(format!("ns/w{w}-{i}"), "ovn");
                    let a = ipam
                        .allocate(subnet, &owner, &AllocationRequest::next_free())
                        .unwrap();
                    if i % 3 == 0 {
                        ipam.release(subnet, &owner).unwrap();
                    } else {
                        kept.push((subnet, a));
                    }
                }
                kept
            })
        })
        .collect();
    let mut seen = HashSet::new();
    let mut macs = HashSet::new();
    let mut total = 0;
    for w in workers {
        for (subnet, a) in w.join().unwrap() {
            total += 1;
            for addr in a.addresses() {
                assert!(seen.insert(addr), "{addr} handed out twice");
            }
            assert!(
                macs.insert((subnet, a.mac.unwrap())),
                "MAC handed out twice"
            );
        }
    }
    assert_eq!(total, 8 * 400);
    let using: u128 = ["a", "b"]
        .iter()
        .map(|s| ipam.subnet_usage(s).unwrap().v4.using)
        .sum();
    assert_eq!(using, total as u128);
    assert_eq!(ipam.subnet_usage("b").unwrap().v6.using, 4 * 400);
}

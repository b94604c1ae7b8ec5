//! Random topologies (proptest): whatever switches, ports and addresses are
//! built through `ovn-nb` in one transaction, `ovn-nbctl` reads back exactly;
//! deleting them through `ovn-nb` leaves the database empty again.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use ovn_nb::*;
use proptest::prelude::*;

/// switch name -> port name -> (mac, ip host byte, port security on)
/// port name -> (addresses, port_security) as read back
type PortsRead = BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)>;

type Topology = BTreeMap<String, BTreeMap<String, (u8, u8, bool)>>;

fn topology() -> impl Strategy<Value = Topology> {
    let ports =
        prop::collection::btree_map("[a-z]{1,6}", (any::<u8>(), 2u8..250, any::<bool>()), 0..4);
    prop::collection::btree_map("ls-[a-z0-9]{1,5}", ports, 1..4)
}

fn address(mac: u8, ip: u8) -> String {
    format!("0a:00:00:00:00:{mac:02x} 10.0.0.{ip}")
}

async fn build(nb: &NbClient, topo: &Topology) -> Result<(), NbError> {
    let mut txn = nb.txn();
    for (ls, ports) in topo {
        txn.ls_add(ls)?;
        for (port, (mac, ip, secure)) in ports {
            let name = format!("{ls}-{port}");
            txn.lsp_add(ls, &name)?;
            txn.lsp_set_addresses(&name, [address(*mac, *ip)])?;
            if *secure {
                txn.lsp_set_port_security(&name, [address(*mac, *ip)])?;
            }
        }
    }
    nb.commit(txn).await?;
    Ok(())
}

fn read_back(remote: &str) -> (BTreeSet<String>, PortsRead) {
    let switches = common::nbctl_rows(remote, "Logical_Switch")
        .iter()
        .map(|r| common::atom(&r["name"]))
        .collect();
    let ports = common::nbctl_rows(remote, "Logical_Switch_Port")
        .iter()
        .map(|r| {
            let set = |v| {
                if v == &serde_json::json!(["set", []]) {
                    BTreeSet::new()
                } else {
                    common::set_of(v)
                }
            };
            (
                common::atom(&r["name"]),
                (set(&r["addresses"]), set(&r["port_security"])),
            )
        })
        .collect();
    (switches, ports)
}

#[test]
fn random_topologies_read_back_identically() {
    let Some(server) = common::nb_server() else {
        return;
    };
    let remote = server.unix_remote();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let nb = rt.block_on(NbClient::connect(&remote)).expect("connect");
    proptest!(ProptestConfig::with_cases(16), |(topo in topology())| {
        rt.block_on(build(&nb, &topo)).expect("build");
        let (switches, ports) = read_back(&remote);
        prop_assert_eq!(switches, topo.keys().cloned().collect::<BTreeSet<_>>());
        let mut expected = BTreeMap::new();
        for (ls, lsps) in &topo {
            for (port, (mac, ip, secure)) in lsps {
                let addr = BTreeSet::from([address(*mac, *ip)]);
                let security = if *secure { addr.clone() } else { BTreeSet::new() };
                expected.insert(format!("{ls}-{port}"), (addr, security));
            }
        }
        prop_assert_eq!(ports, expected);

        let mut txn = nb.txn();
        for ls in topo.keys() {
            txn.ls_del(ls).expect("ls_del");
        }
        rt.block_on(nb.commit(txn)).expect("delete");
        let (switches, ports) = read_back(&remote);
        prop_assert!(switches.is_empty() && ports.is_empty());
    });
}

//! Helpers shared by the client test files (each file is its own test crate, and uses
//! only some of them).
#![allow(dead_code)]

use ovn_harness::{Db, OvsdbServer};
use ovsdb::operation::WaitUntil;
use ovsdb::{Atom, Condition, Operation, Row};

/// A transaction the server holds without end: a `wait` for a row that never exists.
pub fn blocking_wait() -> Vec<Operation> {
    let never = Row::new().with("name", Atom::from("never"));
    vec![
        Operation::wait("Logical_Switch", ["name"], WaitUntil::Equal, vec![never])
            .with_condition(Condition::eq("name", Atom::from("never")))
            .into(),
    ]
}

/// A standalone NB server started for one test; `None` (the test returns early) only
/// where the OVS tools are missing and `CI` is not set.
pub fn start_nb() -> Option<OvsdbServer> {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool"]) {
        return None;
    }
    Some(OvsdbServer::start(Db::Northbound).expect("start ovsdb-server"))
}

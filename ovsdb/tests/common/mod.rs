//! Helpers shared by the client test files (each file is its own test crate).

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

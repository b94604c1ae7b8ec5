//! Shared helpers: a real OVN central (NB, SB, northd) and the real `ovn-nbctl`.

use ovn_harness::OvnCentral;

/// NB + SB + ovn-northd, or None outside CI when the tools are missing.
pub fn central() -> Option<OvnCentral> {
    if !ovn_harness::require(&[
        "ovsdb-server",
        "ovsdb-tool",
        "ovn-northd",
        "ovn-nbctl",
        "ovn-sbctl",
    ]) {
        return None;
    }
    Some(OvnCentral::start_tcp().expect("start NB, SB and ovn-northd"))
}

/// Runs the real `ovn-nbctl` against `remote`.
pub fn nbctl(remote: &str, args: &[&str]) -> String {
    let db = format!("--db={remote}");
    let mut all = vec![db.as_str(), "--timeout=10"];
    all.extend_from_slice(args);
    ovn_harness::run("ovn-nbctl", &all).expect("ovn-nbctl")
}

/// Runs the real `ovn-sbctl` against `remote`.
pub fn sbctl(remote: &str, args: &[&str]) -> String {
    let db = format!("--db={remote}");
    let mut all = vec![db.as_str(), "--timeout=10"];
    all.extend_from_slice(args);
    ovn_harness::run("ovn-sbctl", &all).expect("ovn-sbctl")
}

/// The whole NB database as `ovsdb-client dump` prints it.
pub fn nb_dump(remote: &str) -> String {
    ovn_harness::run("ovsdb-client", &["dump", remote, "OVN_Northbound"])
        .expect("ovsdb-client dump")
}

/// `ovn-nbctl get TABLE RECORD COLUMN`, unquoted.
pub fn nb_get(remote: &str, table: &str, record: &str, column: &str) -> String {
    nbctl(remote, &["get", table, record, column])
        .trim()
        .trim_matches('"')
        .to_string()
}

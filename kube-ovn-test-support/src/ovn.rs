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

/// A router's port patching a switch to it: on `router`, with `mac` and `network`
/// (`100.64.0.1/16`).
#[derive(Debug, Clone, Copy)]
pub struct RouterPort<'a> {
    /// The logical router (already there).
    pub router: &'a str,
    /// The router port's MAC.
    pub mac: &'a str,
    /// The router port's address and prefix length.
    pub network: &'a str,
}

/// `ovn-nbctl` commands patching `switch` to `port.router` as Kube-OVN names the pair:
/// the router port `<router>-<name>` and its peer `<name>-<router>` on the switch.
pub fn router_patch(port: RouterPort<'_>, switch: &str, name: &str) -> Vec<Vec<String>> {
    let router = port.router;
    let (lrp, lsp) = (format!("{router}-{name}"), format!("{name}-{router}"));
    vec![
        vec![
            "lrp-add".into(),
            router.into(),
            lrp.clone(),
            port.mac.into(),
            port.network.into(),
        ],
        vec!["lsp-add".into(), switch.into(), lsp.clone()],
        vec!["lsp-set-type".into(), lsp.clone(), "router".into()],
        vec!["lsp-set-addresses".into(), lsp.clone(), "router".into()],
        vec!["lsp-set-options".into(), lsp, format!("router-port={lrp}")],
    ]
}

/// `ovn-nbctl` commands as the arguments of one transaction: joined by `--`.
pub fn one_transaction(cmds: Vec<Vec<String>>) -> Vec<String> {
    cmds.join(&"--".to_string())
}

/// `ovn-nbctl` arguments (one transaction) making the join switch as Kube-OVN's
/// controller writes it: `ls-add join`, the patch to `router` when given, and a
/// `node-<node>` port addressed `<mac> <ip>` for each `(node, mac, ip)`.
pub fn join_switch<N, M, I>(
    router: Option<RouterPort<'_>>,
    nodes: impl IntoIterator<Item = (N, M, I)>,
) -> Vec<String>
where
    N: std::fmt::Display,
    M: std::fmt::Display,
    I: std::fmt::Display,
{
    let mut cmds: Vec<Vec<String>> = vec![vec!["ls-add".into(), "join".into()]];
    if let Some(port) = router {
        cmds.extend(router_patch(port, "join", "join"));
    }
    for (node, mac, ip) in nodes {
        let port = format!("node-{node}");
        cmds.push(vec!["lsp-add".into(), "join".into(), port.clone()]);
        cmds.push(vec![
            "lsp-set-addresses".into(),
            port,
            format!("{mac} {ip}"),
        ]);
    }
    one_transaction(cmds)
}

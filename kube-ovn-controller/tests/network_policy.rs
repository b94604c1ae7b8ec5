//! The NetworkPolicy truth table without a datapath, first half: the sig-network e2e
//! layout (namespaces x, y, z; pods a, b, c; ports 80 and 81 over TCP and UDP) on a
//! real NB, SB and ovn-northd. For each case the reconciler's pass writes the
//! policies' rows, then for every ordered pod pair, port and protocol `ovn-trace` on
//! the Southbound says delivered or dropped, compared with an independent evaluator
//! of the API's semantics (`netpol/eval.rs`). Cases run in order on one layout, so a
//! policy of the same name in the next case is an update, and one absent from it a
//! delete. The second half is `network_policy_table2.rs` (one binary each keeps
//! either under a minute).

use kube_ovn_test_support::netpol;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truth_table_first_half_matches_ovn_trace() {
    let mut cases = netpol::table::cases();
    cases.truncate(netpol::table::FIRST_HALF);
    netpol::table::check(cases).await;
}

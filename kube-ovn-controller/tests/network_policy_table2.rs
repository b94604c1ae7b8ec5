//! The NetworkPolicy truth table, second half (see `network_policy.rs`): egress,
//! policies adding up, a pod relabelled (its address sets change, its ACL rows do
//! not) and every policy deleted (no rows left, all open).

use kube_ovn_test_support::netpol;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truth_table_second_half_matches_ovn_trace() {
    let cases = netpol::table::cases().split_off(netpol::table::FIRST_HALF);
    netpol::table::check(cases).await;
}

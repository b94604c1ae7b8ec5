//! The README's main job: the demo brings up a real OVN and prints what northd compiled.

use std::process::Command;

#[test]
fn demo_prints_what_northd_compiled() {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool", "ovn-northd", "ovn-nbctl"]) {
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_ovn-demo"))
        .output()
        .expect("run ovn-demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "ovn-demo failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for port in ["p1", "p2", "p3", "lr0-sw0", "sw1-lr0"] {
        assert!(
            stdout.lines().any(|l| l.trim_start().starts_with(port)),
            "no Port_Binding line for {port}:\n{stdout}"
        );
    }
    for dp in ["sw0", "sw1", "lr0"] {
        assert!(
            stdout.contains(&format!("  {dp} ")),
            "no datapath {dp}:\n{stdout}"
        );
    }
    // northd compiled p3's address into ARP responder flows on sw1
    assert!(stdout.contains("arp.tpa == 10.0.1.13"), "{stdout}");
}

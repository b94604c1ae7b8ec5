//! The workspace's binaries, for a test in another crate than the binary's.
//!
//! Cargo gives a test `CARGO_BIN_EXE_<name>` only for its own package's binaries.
//! `cargo test --workspace` builds every package's binaries before it runs a test, into
//! the directory above the test's own executable (`target/<profile>/deps/..`); that is
//! where these are looked up.

use std::path::PathBuf;

/// The path of the workspace binary `name` (`kube-ovn`, `kube-ovn-controller`,
/// `kube-ovn-daemon`, `kubectl-ko`, `kube-ovn-sandbox`).
///
/// Panics, naming the command that builds it, when it is not there: a test of one
/// package alone (`cargo test -p ...`) does not build the other packages' binaries.
pub fn workspace_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("a test runs from target/<profile>/deps");
    let path = profile_dir.join(name);
    assert!(
        path.is_file(),
        "{} is not built: run the tests with `cargo test --workspace`, or `cargo build --workspace --bins` first",
        path.display()
    );
    path
}

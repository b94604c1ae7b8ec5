//! Configuration and result parsing on arbitrary bytes: never panics, and whatever parses
//! re-emits to JSON that parses back to the same value; a parsed result converts to every
//! version (or fails only for the 0.1.0/0.2.0 layout) and the conversion round-trips too.
//!
//! One property, two drivers: the cargo-fuzz target `parse` (`fuzz/fuzz_targets/parse.rs`
//! includes this file) and the replay test in `main.rs`, which runs it on every input of the
//! committed seed corpus and of a local fuzzing corpus.

use cni_spec::version::ResultLayout;
use cni_spec::{CniError, CniResult, NetworkConfigList, PluginConfig, ALL_VERSIONS};

/// Panics when `data` breaks a property.
pub fn check(data: &[u8]) {
    if let Ok(result) = CniResult::from_slice(data) {
        let again = CniResult::from_slice(result.to_json().as_bytes()).expect("re-parse");
        assert_eq!(again, result);
        for version in ALL_VERSIONS {
            match result.convert_to(version) {
                Ok(converted) => {
                    let back = CniResult::from_slice(converted.to_json().as_bytes())
                        .expect("converted result re-parses");
                    assert_eq!(back, converted);
                }
                Err(_) => assert_eq!(version.result_layout(), ResultLayout::Legacy),
            }
        }
    }
    if let Ok(list) = NetworkConfigList::from_slice(data) {
        let bytes = serde_json::to_vec(&list).expect("serialize");
        assert_eq!(
            NetworkConfigList::from_slice(&bytes).expect("re-parse"),
            list
        );
    }
    if let Ok(conf) = PluginConfig::from_slice(data) {
        assert_eq!(
            PluginConfig::from_slice(&conf.to_bytes()).expect("re-parse"),
            conf
        );
    }
    if let Ok(err) = serde_json::from_slice::<CniError>(data) {
        assert_eq!(
            serde_json::from_str::<CniError>(&err.to_json()).expect("re-parse"),
            err
        );
    }
}

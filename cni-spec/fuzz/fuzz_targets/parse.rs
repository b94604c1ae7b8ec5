//! cargo-fuzz driver of the parse property; the property itself lives with the replay test
//! that runs it on the seed corpus under `cargo test`.
#![no_main]

#[path = "../../tests/fuzz_replay/parse.rs"]
mod property;

libfuzzer_sys::fuzz_target!(|data: &[u8]| property::check(data));

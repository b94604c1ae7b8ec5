//! Feeds arbitrary bytes, split at fuzzer-chosen points, to the framing decoder.
//!
//! Properties: no panic; every frame starts with `{`, ends with a closing bracket, is no longer than the bound; the
//! frames (or the error) do not depend on how the input was split across reads.
//!
//! One property, two drivers: the cargo-fuzz target `deframer` (`fuzz/fuzz_targets/deframer.rs`
//! includes this file) and the replay test in `main.rs`, which runs it on every input of the
//! committed seed corpus and of a local fuzzing corpus.

use ovsdb::codec::{Deframer, FrameError};
use ovsdb::rpc::Message;

const MAX_LEN: usize = 4096;

fn decode(chunks: &[&[u8]]) -> (Vec<Vec<u8>>, Option<FrameError>) {
    let mut deframer = Deframer::new(MAX_LEN);
    let mut frames = Vec::new();
    for chunk in chunks {
        deframer.push(chunk);
        loop {
            match deframer.next_frame() {
                Ok(Some(frame)) => {
                    assert_eq!(frame.first(), Some(&b'{'));
                    // Depth counts both bracket kinds; a mismatched "{]" is left to the JSON parser.
                    assert!(matches!(frame.last(), Some(b'}' | b']')));
                    assert!(frame.len() <= MAX_LEN);
                    // Meaning is checked apart from framing, and must never panic either.
                    let _ = Message::from_slice(&frame);
                    frames.push(frame.to_vec());
                }
                Ok(None) => break,
                Err(e) => return (frames, Some(e)),
            }
        }
    }
    (frames, deframer.finish().err())
}

/// Panics when `data` breaks a property. The first byte chooses where to split the rest.
pub fn check(data: &[u8]) {
    let Some((&cut_seed, input)) = data.split_first() else {
        return;
    };
    let whole = decode(&[input]);
    let cut = usize::from(cut_seed) * input.len() / 256;
    let (a, b) = input.split_at(cut);
    let split = decode(&[a, b]);
    // The error kind may only differ in how far the scan got before the bound tripped.
    assert_eq!(whole.0, split.0);
    assert_eq!(whole.1.is_some(), split.1.is_some());
}

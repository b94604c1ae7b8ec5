//! Replays the `deframer` fuzz target's corpus as a plain test: the committed seeds
//! (`seeds/deframer/`, which keep every input a fuzzer once failed on) and, when someone has
//! fuzzed on this machine, the local corpus in `fuzz/corpus/deframer/`.

mod deframer;

use std::path::{Path, PathBuf};

/// The files of a corpus directory, sorted; none when it does not exist.
fn corpus(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("readable corpus directory").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn deframer_corpus_keeps_its_properties() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let seeds = corpus(&root.join("tests/fuzz_replay/seeds/deframer"));
    assert!(!seeds.is_empty(), "the seed corpus is missing");
    let local = corpus(&root.join("fuzz/corpus/deframer"));
    for file in seeds.iter().chain(&local) {
        let data = std::fs::read(file).expect("readable corpus file");
        let outcome = std::panic::catch_unwind(|| deframer::check(&data));
        assert!(
            outcome.is_ok(),
            "{} breaks the deframer property",
            file.display()
        );
    }
}

//! Replays the `parse` fuzz target's corpus as a plain test: the committed seeds
//! (`seeds/parse/`, which keep every input a fuzzer once failed on) and, when someone has
//! fuzzed on this machine, the local corpus in `fuzz/corpus/parse/`.

mod parse;

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
fn parse_corpus_keeps_its_properties() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let seeds = corpus(&root.join("tests/fuzz_replay/seeds/parse"));
    assert!(!seeds.is_empty(), "the seed corpus is missing");
    let local = corpus(&root.join("fuzz/corpus/parse"));
    for file in seeds.iter().chain(&local) {
        let data = std::fs::read(file).expect("readable corpus file");
        let outcome = std::panic::catch_unwind(|| parse::check(&data));
        assert!(
            outcome.is_ok(),
            "{} breaks the parse property",
            file.display()
        );
    }
}

/// Found by the fuzzer: an unknown field holding a number too large for an integer was
/// re-emitted as a float that parsed back to a neighbouring value, so a plugin passing the
/// configuration through changed it. Floats must decode exactly (`float_roundtrip`).
#[test]
fn a_float_in_an_unknown_field_survives_the_round_trip() {
    let input = br#"{"[M":-999999999969999999999}"#;
    let conf = cni_spec::PluginConfig::from_slice(input).unwrap();
    assert_eq!(conf.extra["[M"].as_f64(), Some(-9.9999999997e20));
    let again = cni_spec::PluginConfig::from_slice(&conf.to_bytes()).unwrap();
    assert_eq!(again, conf);
    parse::check(input);
}

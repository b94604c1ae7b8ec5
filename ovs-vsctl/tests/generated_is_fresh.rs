//! The checked-in model in `src/generated/` must be exactly what the generator
//! makes of the vendored schema. To regenerate after changing the schema or the
//! generator:
//!
//!     REGENERATE=1 cargo test -p ovs-vsctl --test generated_is_fresh

use std::path::Path;

#[test]
fn generated_model_matches_vendored_schema() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let schema =
        std::fs::read_to_string(root.join("schema/vswitch.ovsschema")).expect("vendored schema");
    let generated =
        ovsdb::codegen::generate(&schema, "vswitch.ovsschema").expect("schema generates");
    let dir = root.join("src/generated");
    if std::env::var_os("REGENERATE").is_some() {
        generated.write_to(&dir).expect("write generated files");
    }
    let stale = generated.stale_files(&dir).expect("read generated files");
    assert!(
        stale.is_empty(),
        "src/generated is stale: {stale:?}; run REGENERATE=1 cargo test -p ovs-vsctl --test generated_is_fresh"
    );
}

//! `ovsdb-codegen <schema.ovsschema> <output-dir>`: writes the typed Rust model
//! of a schema into `<output-dir>` (see `ovsdb::codegen`). With only the schema
//! argument, prints the generated files to stdout instead.

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (schema_path, out_dir) = match args.as_slice() {
        [schema] => (schema, None),
        [schema, dir] => (schema, Some(dir)),
        _ => {
            eprintln!("usage: ovsdb-codegen <schema.ovsschema> [<output-dir>]");
            return ExitCode::from(2);
        }
    };
    match run(Path::new(schema_path), out_dir.map(Path::new)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ovsdb-codegen: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(schema_path: &Path, out_dir: Option<&Path>) -> Result<(), Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(schema_path)
        .map_err(|e| format!("reading {}: {e}", schema_path.display()))?;
    let file_name = schema_path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| format!("{}: no file name", schema_path.display()))?;
    let generated = ovsdb::codegen::generate(&text, file_name)?;
    match out_dir {
        Some(dir) => generated.write_to(dir)?,
        None => {
            for f in &generated.files {
                println!("// ===== {} =====\n{}", f.name, f.contents);
            }
        }
    }
    Ok(())
}

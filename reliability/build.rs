//! Turns every cargo-fuzz target in `../fuzz/fuzz_targets/` into plain code for the test
//! harness (`tests/it/fuzz.rs`): it drops the inner attributes (`#![no_main]`), inner docs and
//! the `libfuzzer_sys` import, and lists the targets, so each target's body compiles and runs
//! on stable under `cargo test` (cargo-fuzz itself needs nightly). The harness defines its
//! own `fuzz_target!` macro that turns the body into `pub fn run(data: &[u8])`.

use std::error::Error;
use std::fmt::Write as _;
use std::fs;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn Error>> {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let targets_dir = manifest.join("../fuzz/fuzz_targets");
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    println!("cargo:rerun-if-changed={}", targets_dir.display());
    let mut files: Vec<PathBuf> = fs::read_dir(&targets_dir)?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    files.retain(|p| p.extension().is_some_and(|e| e == "rs"));
    files.sort();
    let mut index = String::new();
    let mut list = String::from(
        "/// A fuzz target: name and body.\npub type Target = (&'static str, fn(&[u8]));\n\
         /// Every fuzz target.\npub const TARGETS: &[Target] = &[\n",
    );
    for file in files {
        println!("cargo:rerun-if-changed={}", file.display());
        let Some(name) = file.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        let text = fs::read_to_string(&file)?;
        let body: String = text
            .lines()
            .filter(|line| {
                let t = line.trim_start();
                !(t.starts_with("#![")
                    || t.starts_with("//!")
                    || t == "use libfuzzer_sys::fuzz_target;")
            })
            .map(|line| format!("{line}\n"))
            .collect();
        fs::write(out.join(format!("fuzz_{name}.rs")), body)?;
        writeln!(
            index,
            "/// The `{name}` fuzz target.\npub mod {name} {{\n    include!(concat!(env!(\"OUT_DIR\"), \"/fuzz_{name}.rs\"));\n}}"
        )?;
        writeln!(list, "    (\"{name}\", {name}::run),")?;
    }
    list.push_str("];\n");
    fs::write(out.join("fuzz_targets.rs"), index + &list)?;
    Ok(())
}

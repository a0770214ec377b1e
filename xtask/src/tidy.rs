//! Repository rules as tests (run by `cargo test --workspace`, so by CI): things no compiler
//! lint checks across the whole workspace.
//!
//! - `unsafe` appears in code only in `crates/index-core/src/mmap.rs`; every other crate root
//!   says `#![forbid(unsafe_code)]`.
//! - No `dbg!` or `todo!` anywhere.
//! - Every package uses the workspace lints (`[lints] workspace = true`).
//! - Every dependency a package declares is used by its code (no dead dependencies).

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::{Path, PathBuf};

    use crate::cmd::workspace_root;

    /// The folders holding workspace packages.
    const PACKAGE_ROOTS: &[&str] = &["crates", "benches", "xtask", "reliability"];

    /// The one file allowed to contain `unsafe` code.
    const MMAP: &str = "crates/index-core/src/mmap.rs";

    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if name == "target" || name.to_string_lossy().starts_with('.') {
                continue;
            }
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                out.push(path);
            }
        }
    }

    fn workspace_rust_files() -> Vec<(String, String)> {
        let root = workspace_root();
        let mut files = Vec::new();
        for dir in PACKAGE_ROOTS {
            rust_files(&root.join(dir), &mut files);
        }
        assert!(files.len() > 50, "found only {} Rust files", files.len());
        files
            .into_iter()
            .map(|path| {
                let text = fs::read_to_string(&path).expect("read a source file");
                let relative = path
                    .strip_prefix(&root)
                    .expect("below the root")
                    .to_string_lossy()
                    .replace('\\', "/");
                (relative, text)
            })
            .collect()
    }

    /// The code of a line: what precedes a `//` comment, with the insides of string literals
    /// blanked (good enough for these keywords; a rule written as a string is not a use).
    fn code(line: &str) -> String {
        let before_comment = line.split("//").next().unwrap_or("");
        let mut out = String::with_capacity(before_comment.len());
        let mut in_string = false;
        let mut escaped = false;
        for ch in before_comment.chars() {
            match (in_string, ch) {
                (true, _) if escaped => escaped = false,
                (true, '\\') => escaped = true,
                (_, '"') => {
                    in_string = !in_string;
                    out.push('"');
                }
                (true, _) => {}
                (false, _) => out.push(ch),
            }
        }
        out
    }

    #[test]
    fn unsafe_code_lives_only_in_the_mmap_module() {
        let this_file = "xtask/src/tidy.rs";
        let mut offenders = Vec::new();
        for (path, text) in workspace_rust_files() {
            if path == MMAP || path == this_file {
                continue;
            }
            for (number, line) in text.lines().enumerate() {
                let code = code(line);
                let unsafe_use = ["unsafe {", "unsafe fn", "unsafe impl", "unsafe extern"]
                    .iter()
                    .any(|pattern| code.contains(pattern));
                if unsafe_use {
                    offenders.push(format!("{path}:{}: {}", number + 1, line.trim()));
                }
            }
        }
        assert!(
            offenders.is_empty(),
            "unsafe outside {MMAP}:\n{}",
            offenders.join("\n")
        );
    }

    #[test]
    fn every_crate_root_but_index_core_forbids_unsafe_code() {
        let mut missing = Vec::new();
        for (path, text) in workspace_rust_files() {
            let is_root = path.ends_with("src/lib.rs")
                || path.ends_with("src/main.rs")
                || path.ends_with("src/bin/crash-child.rs");
            if is_root
                && !path.starts_with("crates/index-core/")
                && !text.contains("#![forbid(unsafe_code)]")
            {
                missing.push(path);
            }
        }
        assert!(
            missing.is_empty(),
            "no #![forbid(unsafe_code)] in: {missing:?}"
        );
    }

    #[test]
    fn no_dbg_or_todo_macros() {
        let this_file = "xtask/src/tidy.rs";
        let mut offenders = Vec::new();
        for (path, text) in workspace_rust_files() {
            if path == this_file {
                continue;
            }
            for (number, line) in text.lines().enumerate() {
                let code = code(line);
                if code.contains("dbg!(") || code.contains("todo!(") {
                    offenders.push(format!("{path}:{}: {}", number + 1, line.trim()));
                }
            }
        }
        assert!(offenders.is_empty(), "{}", offenders.join("\n"));
    }

    #[test]
    fn every_package_uses_the_workspace_lints() {
        let root = workspace_root();
        let manifest = fs::read_to_string(root.join("Cargo.toml")).expect("root manifest");
        let members: Vec<&str> = manifest
            .lines()
            .map(str::trim)
            .filter_map(|line| line.strip_prefix('"')?.strip_suffix("\","))
            .collect();
        assert!(members.len() >= 7, "members: {members:?}");
        for member in members {
            let text = fs::read_to_string(root.join(member).join("Cargo.toml"))
                .unwrap_or_else(|e| panic!("{member}/Cargo.toml: {e}"));
            assert!(
                text.contains("[lints]\nworkspace = true"),
                "{member}/Cargo.toml does not use the workspace lints"
            );
        }
    }

    /// The dependency names declared in a manifest's `[dependencies]`, `[dev-dependencies]`,
    /// `[build-dependencies]` and `[target.'…'.dependencies]` tables.
    fn declared_dependencies(manifest: &str) -> Vec<String> {
        let mut names = Vec::new();
        let mut in_deps = false;
        for line in manifest.lines().map(str::trim) {
            if line.starts_with('[') {
                in_deps = line.ends_with("dependencies]");
                continue;
            }
            if !in_deps || line.is_empty() || line.starts_with('#') {
                continue;
            }
            let key = line.split(['=', '.']).next().unwrap_or("").trim();
            if !key.is_empty() {
                names.push(key.to_owned());
            }
        }
        names
    }

    #[test]
    fn every_declared_dependency_is_used() {
        let root = workspace_root();
        let manifest = fs::read_to_string(root.join("Cargo.toml")).expect("root manifest");
        let members: Vec<&str> = manifest
            .lines()
            .map(str::trim)
            .filter_map(|line| line.strip_prefix('"')?.strip_suffix("\","))
            .collect();
        let mut unused = Vec::new();
        for member in members {
            let dir = root.join(member);
            let text = fs::read_to_string(dir.join("Cargo.toml"))
                .unwrap_or_else(|e| panic!("{member}/Cargo.toml: {e}"));
            let mut files = Vec::new();
            rust_files(&dir, &mut files);
            if member == "reliability" {
                // Its build script compiles the cargo-fuzz targets into its tests.
                rust_files(&root.join("fuzz/fuzz_targets"), &mut files);
            }
            let code: String = files
                .iter()
                .map(|f| fs::read_to_string(f).expect("read a source file"))
                .collect::<Vec<_>>()
                .join("\n");
            for name in declared_dependencies(&text) {
                let ident = name.replace('-', "_");
                let used = [
                    format!("{ident}::"),
                    format!("use {ident}"),
                    format!("extern crate {ident}"),
                ]
                .iter()
                .any(|pattern| code.contains(pattern.as_str()));
                if !used {
                    unused.push(format!("{member}: `{name}` is declared but never used"));
                }
            }
        }
        assert!(unused.is_empty(), "{}", unused.join("\n"));
    }
}

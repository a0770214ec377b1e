//! Repository rules as tests (run by `cargo test --workspace`, so by CI): things no compiler
//! lint checks across the whole workspace.
//!
//! - `unsafe` appears in code only in `crates/index-core/src/mmap.rs`; every other crate root
//!   says `#![forbid(unsafe_code)]`.
//! - No `dbg!` or `todo!` anywhere.
//! - Every package uses the workspace lints (`[lints] workspace = true`).
//! - Every dependency a package declares is used by its code (no dead dependencies).
//! - Fault injection is test support only: the I/O seam's test backend (`seglog-faults`) is in
//!   no normal dependency tree of a shipped or benchmarked package (with every feature on,
//!   too), the only feature of a workspace crate is `seglog`'s `metrics` (which enables the
//!   `metrics` dependency and nothing else), and no shipped or benchmark source makes a
//!   non-direct seam.
//! - No module cycles: within a crate, the top-level modules' `crate::` references (tests
//!   aside) form no cycle.

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::{Path, PathBuf};

    use crate::cmd::{cargo, workspace_root};

    /// The folders holding workspace packages.
    const PACKAGE_ROOTS: &[&str] = &["crates", "benches", "xtask", "reliability"];

    /// The file allowed to contain `unsafe` library code.
    const MMAP: &str = "crates/index-core/src/mmap.rs";
    /// The one other file with `unsafe`: a test binary's counting global allocator (implementing
    /// `GlobalAlloc` is `unsafe impl`, and it only forwards to `System`), which pins that recovery
    /// never asks the heap for an index-sized buffer (issue #28's per-segment `memset`).
    const COUNTING_ALLOCATOR: &str = "crates/segment/tests/it/heap_allocations.rs";

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
            if path == MMAP || path == this_file || path == COUNTING_ALLOCATOR {
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

    /// `cargo tree --prefix none --format "{p}|{f}"` with `args`: one line per package,
    /// `name version (path)|enabled features`.
    fn cargo_tree(args: &[&str]) -> String {
        let mut command = cargo();
        command
            .arg("tree")
            .args(args)
            .args(["--prefix", "none", "--format", "{p}|{f}"]);
        let output = command.output().expect("run cargo tree");
        assert!(
            output.status.success(),
            "cargo tree {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).expect("cargo tree prints UTF-8")
    }

    /// The features workspace crates may define, with exactly what each enables: `seglog`'s
    /// `metrics` (Kafka's log metrics, docs/observability.md) pulls in the `metrics` facade and
    /// nothing of ours, so no feature, unified from anywhere, reaches fault injection.
    /// (package folder, package, feature, its `[features]` line).
    const ALLOWED_FEATURES: &[(&str, &str, &str, &str)] = &[
        (
            "crates/log",
            "seglog",
            "metrics",
            "metrics = [\"dep:metrics\"]",
        ),
        // S3 for the remote tier (object_store's client: a long build, off by default).
        (
            "crates/tiered",
            "seglog-tiered",
            "aws",
            "aws = [\"object_store/aws-base\", \"object_store/reqwest\", \"object_store/ring\", \"dep:reqwest\", \"dep:rustls\"]",
        ),
        // Kafka's remote-storage metrics (`RemoteCopyBytesPerSec`, ...): the facade only.
        (
            "crates/tiered",
            "seglog-tiered",
            "metrics",
            "metrics = [\"dep:metrics\"]",
        ),
        (
            "crates/cli",
            "seglog-cli",
            "s3",
            "s3 = [\"seglog-tiered/aws\"]",
        ),
    ];

    /// The `[features]` table of a manifest, one trimmed line per feature.
    fn features_table(manifest: &str) -> Option<Vec<String>> {
        let mut lines = manifest.lines().map(str::trim);
        lines.find(|l| *l == "[features]")?;
        Some(
            lines
                .take_while(|l| !l.starts_with('['))
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_owned)
                .collect(),
        )
    }

    #[test]
    fn features_table_reads_the_lines_of_the_table() {
        let manifest = "[package]\nname = \"x\"\n\n[features]\n# why\nmetrics = [\"dep:metrics\"]\n\n[dev-dependencies]\na = 1\n";
        assert_eq!(
            features_table(manifest),
            Some(vec!["metrics = [\"dep:metrics\"]".to_owned()])
        );
        assert_eq!(features_table("[package]\n"), None);
    }

    /// What `cargo build --release -p seglog-cli` and every benchmark compile contains no fault
    /// hook: the fault-injecting backend of the segment I/O seam lives in its own crate, which
    /// no shipped or benchmarked package depends on (dev-dependencies aside, every feature on
    /// or off), and the one feature a workspace crate has (`seglog`'s `metrics`) enables only
    /// the `metrics` facade, so no dev-dependency can unify fault injection into a shared build.
    #[test]
    fn shipped_and_benchmarked_builds_contain_no_fault_injection() {
        for package in [
            "seglog-cli",
            "seglog-benches",
            "seglog-raft",
            "seglog",
            "seglog-segment",
            "seglog-records",
            "seglog-index-core",
        ] {
            let tree = cargo_tree(&["-p", package, "-e", "normal,build"]);
            assert!(
                tree.lines().any(|l| l.starts_with(&format!("{package} v"))),
                "cargo tree -p {package} does not list {package}:\n{tree}"
            );
            let all_features = cargo_tree(&["-p", package, "--all-features", "-e", "normal,build"]);
            let faults: Vec<&str> = all_features
                .lines()
                .filter(|l| l.starts_with("seglog-faults v"))
                .collect();
            assert!(
                faults.is_empty(),
                "{package} with every feature depends on the fault-injecting backend: {faults:?}"
            );
            if package != "seglog-index-core" && package != "seglog-records" {
                assert!(
                    tree.lines().any(|l| l.starts_with("seglog-segment v")),
                    "{package} no longer depends on seglog-segment: this check proves nothing"
                );
            }
            let faults: Vec<&str> = tree
                .lines()
                .filter(|l| l.starts_with("seglog-faults v"))
                .collect();
            assert!(
                faults.is_empty(),
                "{package} depends on the fault-injecting backend: {faults:?}"
            );
        }
        // Over the whole workspace, dev-dependencies included: no feature of ours is enabled
        // anywhere but the allowed ones (and the implicit `default` of the command line).
        let tree = cargo_tree(&["--workspace", "-e", "features,normal,build,dev"]);
        let features: Vec<&str> = tree
            .lines()
            .filter(|l| {
                (l.starts_with("seglog") || l.starts_with("xtask"))
                    && l.contains(" feature \"")
                    && !l.contains(" feature \"default\"")
                    && !ALLOWED_FEATURES.iter().any(|(_, package, feature, _)| {
                        l.starts_with(&format!("{package} feature \"{feature}\""))
                    })
            })
            .collect();
        assert!(features.is_empty(), "workspace features: {features:?}");
        // Every package's `[features]` table is exactly what is allowed.
        let root = workspace_root();
        let manifest = fs::read_to_string(root.join("Cargo.toml")).expect("root manifest");
        let members: Vec<&str> = manifest
            .lines()
            .map(str::trim)
            .filter_map(|line| line.strip_prefix('"')?.strip_suffix("\","))
            .collect();
        let mut unexpected = Vec::new();
        for member in &members {
            let text = fs::read_to_string(root.join(member).join("Cargo.toml"))
                .unwrap_or_else(|e| panic!("{member}/Cargo.toml: {e}"));
            let allowed: Vec<String> = ALLOWED_FEATURES
                .iter()
                .filter(|(dir, _, _, _)| dir == member)
                .map(|(_, _, _, line)| (*line).to_owned())
                .collect();
            match features_table(&text) {
                None if allowed.is_empty() => {}
                Some(table) if table == allowed => {}
                found => unexpected.push(format!("{member}: {found:?}, allowed {allowed:?}")),
            }
        }
        assert!(
            members.contains(&"crates/log") && members.len() >= 7,
            "members: {members:?}"
        );
        assert!(unexpected.is_empty(), "crate features: {unexpected:?}");
        // The test backend is only reached through `Io::new`: shipped and benchmark code never
        // makes one (the seam's own unit tests and the backend crate do).
        let mut offenders = Vec::new();
        for (path, text) in workspace_rust_files() {
            let shipped_or_bench = path.starts_with("crates/cli/")
                || path.starts_with("crates/raft/src/")
                || path.starts_with("benches/")
                || path.contains("/benches/")
                || path.starts_with("crates/log/src/")
                || (path.starts_with("crates/segment/src/")
                    && path != "crates/segment/src/seam.rs");
            if !shipped_or_bench {
                continue;
            }
            for (number, line) in text.lines().enumerate() {
                let code = code(line);
                if code.contains("Io::new(") || code.contains("seglog_faults") {
                    offenders.push(format!("{path}:{}: {}", number + 1, line.trim()));
                }
            }
        }
        assert!(offenders.is_empty(), "{}", offenders.join("\n"));
    }

    /// The top-level modules a file's code (comments and `#[cfg(test)] mod` blocks at the end
    /// aside) names as `crate::<module>`, directly or in a `use crate::{...}` group.
    fn crate_references(text: &str) -> std::collections::BTreeSet<String> {
        let mut code_text = String::new();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let next = lines[i + 1..].iter().find(|l| !l.trim().is_empty());
            if line.trim() == "#[cfg(test)]"
                && next.is_some_and(|l| l.trim_start().starts_with("mod "))
            {
                break;
            }
            code_text.push_str(&code(line));
            code_text.push('\n');
        }
        let ident = |c: char| c.is_alphanumeric() || c == '_';
        let mut names = std::collections::BTreeSet::new();
        let mut rest = code_text.as_str();
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            if let Some(group) = after.strip_prefix('{') {
                // The first identifier of every top-level item of the group.
                let (mut depth, mut item_start, mut name) = (0usize, true, String::new());
                for ch in group.chars() {
                    match ch {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => item_start = true,
                        c if depth == 0 && item_start && ident(c) => {
                            name.push(c);
                            continue;
                        }
                        c if depth == 0 && item_start && c.is_whitespace() && name.is_empty() => {
                            continue;
                        }
                        _ => {}
                    }
                    if !name.is_empty() {
                        names.insert(std::mem::take(&mut name));
                    }
                    if ch != ',' {
                        item_start = false;
                    }
                }
                if !name.is_empty() {
                    names.insert(name);
                }
            } else {
                names.insert(after.chars().take_while(|c| ident(*c)).collect());
            }
            rest = after;
        }
        names
    }

    /// The cycles among the top-level modules of the crate whose sources are in `src`.
    fn module_cycles(src: &Path) -> Vec<Vec<String>> {
        use std::collections::{BTreeMap, BTreeSet};
        let mut uses: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let Ok(entries) = fs::read_dir(src) else {
            return Vec::new();
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let module = if path.is_dir() {
                if name == "bin" {
                    continue; // binaries are crates of their own
                }
                name
            } else if let Some(stem) = name.strip_suffix(".rs") {
                if stem == "lib" || stem == "main" {
                    continue;
                }
                stem.to_owned()
            } else {
                continue;
            };
            let mut files = Vec::new();
            if path.is_dir() {
                rust_files(&path, &mut files);
            } else {
                files.push(path);
            }
            let refs = uses.entry(module.clone()).or_default();
            for file in files {
                let text = fs::read_to_string(&file).expect("read a source file");
                refs.extend(crate_references(&text).into_iter().filter(|m| *m != module));
            }
        }
        let modules: BTreeSet<String> = uses.keys().cloned().collect();
        for refs in uses.values_mut() {
            refs.retain(|m| modules.contains(m));
        }
        // A module is on a cycle with every module that reaches it and that it reaches.
        let reach = |from: &String| {
            let mut seen = BTreeSet::new();
            let mut todo = vec![from.clone()];
            while let Some(m) = todo.pop() {
                for next in &uses[&m] {
                    if seen.insert(next.clone()) {
                        todo.push(next.clone());
                    }
                }
            }
            seen
        };
        let reaches: BTreeMap<&String, BTreeSet<String>> =
            modules.iter().map(|m| (m, reach(m))).collect();
        let mut cycles: Vec<Vec<String>> = Vec::new();
        let mut placed = BTreeSet::new();
        for m in &modules {
            if placed.contains(m) || !reaches[m].contains(m) {
                continue;
            }
            let component: Vec<String> = modules
                .iter()
                .filter(|o| reaches[m].contains(*o) && reaches[*o].contains(m))
                .cloned()
                .collect();
            placed.extend(component.iter().cloned());
            cycles.push(component);
        }
        cycles
    }

    #[test]
    fn crate_references_read_paths_and_use_groups() {
        let text = "use crate::error::{Error, IoOp};\nuse crate::{\n    Result, io,\n    seam::{Direct, Io},\n};\n// crate::comment\nlet x = crate::walk::scan();\n#[cfg(test)]\nmod tests {\n    use crate::later;\n}\n";
        let found: Vec<String> = crate_references(text).into_iter().collect();
        assert_eq!(found, ["Result", "error", "io", "seam", "walk"]);
    }

    #[test]
    fn no_module_cycles() {
        let root = workspace_root();
        let mut sources = vec![
            root.join("benches/src"),
            root.join("reliability/src"),
            root.join("xtask/src"),
        ];
        for entry in fs::read_dir(root.join("crates"))
            .expect("crates/")
            .flatten()
        {
            sources.push(entry.path().join("src"));
        }
        let mut found = Vec::new();
        for src in &sources {
            for cycle in module_cycles(src) {
                found.push(format!("{}: {}", src.display(), cycle.join(" <-> ")));
            }
        }
        assert!(found.is_empty(), "module cycles:\n{}", found.join("\n"));
        assert!(sources.len() >= 8, "sources: {sources:?}");
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

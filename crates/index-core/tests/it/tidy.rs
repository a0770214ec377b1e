//! Repository rules for this crate, as a test: `unsafe` only in `src/mmap.rs`, and there every
//! `unsafe` block or impl carries a `// SAFETY:` note; no `dbg!` / `todo!` anywhere.

use std::path::Path;

fn sources() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    files.sort();
    assert!(files.iter().any(|(n, _)| n == "mmap.rs"));
    files
}

fn code(line: &str) -> &str {
    line.split("//").next().unwrap_or("")
}

#[test]
fn unsafe_only_in_mmap_rs_and_always_justified() {
    for (name, text) in sources() {
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let code = code(line);
            if !code.contains("unsafe") || code.contains("unsafe_code") {
                continue;
            }
            assert_eq!(name, "mmap.rs", "unsafe outside mmap.rs: {name}:{}", i + 1);
            // Declarations (`unsafe fn` in the trait) document their contract in `# Safety`;
            // every use (a block or an impl) needs a SAFETY note just above it.
            if code.contains("unsafe fn") {
                continue;
            }
            let justified = lines[i.saturating_sub(8)..=i]
                .iter()
                .any(|l| l.contains("SAFETY:"));
            assert!(justified, "unsafe without a SAFETY note: {name}:{}", i + 1);
        }
    }
}

#[test]
fn no_debug_leftovers() {
    for (name, text) in sources() {
        for (i, line) in text.lines().enumerate() {
            let code = code(line);
            for banned in ["dbg!(", "todo!(", "unimplemented!("] {
                assert!(!code.contains(banned), "{banned} in {name}:{}", i + 1);
            }
        }
    }
}

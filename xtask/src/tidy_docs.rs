//! A repository rule for the API docs, as a test (run by `cargo test --workspace`, so by CI):
//! the rustdoc of the published crates stands alone, because docs.rs shows it without this
//! repository around it.
//!
//! In the public doc comments (`///` on a `pub` item, on a variant or field of a `pub enum`,
//! on an item of a `pub trait`; `//!` of a crate root or of a `pub mod`) of the published
//! crates:
//! - no pointer to module docs ("see the module docs"): the modules are private, so their docs
//!   are not rendered;
//! - no "§" (sections of the repository's Kafka storage spec);
//! - no file of this repository (`docs/format.md`, `consumer.rs`, `tests/it/...`,
//!   `examples/...`): a reader of docs.rs has none of them;
//! - examples `use` no workspace crate but the documented one (the facade's docs import from
//!   `seglog` only).
//!
//! Its own scanner is tested on a small source below, so a rule that stops matching shows.
//! It lives here rather than in one crate's tests because it reads every published crate.

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::{Path, PathBuf};

    use crate::cmd::workspace_root;

    /// The published crates (xtask's `ci::PUBLISHED`, and `seglog-raft`) as (package folder,
    /// the crates its doc examples may `use`: itself first, then the layers a user of it
    /// depends on as well). Above the facade, examples import from `seglog`, not its layers.
    const PUBLISHED_CRATES: &[(&str, &[&str])] = &[
        ("crates/index-core", &["seglog_index_core"]),
        ("crates/records", &["seglog_records"]),
        (
            "crates/segment",
            &["seglog_segment", "seglog_records", "seglog_index_core"],
        ),
        ("crates/log", &["seglog"]),
        ("crates/tiered", &["seglog_tiered", "seglog"]),
        ("crates/cli", &["seglog_cli", "seglog"]),
        ("crates/raft", &["seglog_raft", "seglog"]),
    ];

    /// The workspace crates a doc example might import.
    const WORKSPACE_CRATES: &[&str] = &[
        "seglog_index_core",
        "seglog_records",
        "seglog_segment",
        "seglog_faults",
        "seglog_cli",
        "seglog_tiered",
        "seglog_raft",
        "seglog_test_corpus",
        "seglog",
    ];

    /// One public doc line: where it is and its text after `///` or `//!`.
    #[derive(Debug, Clone, PartialEq, Eq)]
    struct DocLine {
        line: usize,
        text: String,
    }

    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                out.push(path);
            }
        }
    }

    /// What precedes a `//` comment, with string and char literals blanked (their braces do
    /// not count).
    fn code(line: &str) -> String {
        let chars: Vec<char> = line.chars().collect();
        let mut out = String::new();
        let mut in_string = false;
        let mut i = 0;
        while i < chars.len() {
            let ch = chars[i];
            if in_string {
                match ch {
                    '\\' => i += 1,
                    '"' => in_string = false,
                    _ => {}
                }
            } else if ch == '/' && chars.get(i + 1) == Some(&'/') {
                break;
            } else if ch == '"' {
                in_string = true;
            } else if ch == '\'' && chars.get(i + 2) == Some(&'\'') {
                i += 2; // 'x'
            } else if ch == '\'' && chars.get(i + 1) == Some(&'\\') {
                // '\n', '\u{7b}': skip to the closing quote.
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
            } else {
                out.push(ch);
            }
            i += 1;
        }
        out
    }

    /// Whether an item line (after its docs and attributes) declares a public item.
    fn is_pub_item(code: &str) -> bool {
        let item = code.trim_start();
        item.starts_with("pub ") && !item.starts_with("pub(")
    }

    /// The public doc lines of one source file. `module_is_public`: whether its `//!` docs are
    /// rendered (a crate root or a `pub mod`).
    fn public_doc_lines(text: &str, module_is_public: bool) -> Vec<DocLine> {
        #[derive(Clone, Copy, PartialEq)]
        enum Body {
            /// A `pub enum`: its variants and their fields are public.
            PubEnum,
            /// A `pub trait`: its items are public.
            PubTrait,
            /// Anything else (a private item, a function, an impl).
            Other,
        }
        let lines: Vec<&str> = text.lines().collect();
        let mut out = Vec::new();
        // The bodies open at each brace depth.
        let mut bodies: Vec<Body> = Vec::new();
        let mut pending: Vec<DocLine> = Vec::new();
        let mut in_attribute = 0i32;
        let mut i = 0;
        while i < lines.len() {
            let raw = lines[i];
            let trimmed = raw.trim_start();
            if let Some(doc) = trimmed.strip_prefix("//!") {
                if module_is_public && bodies.is_empty() {
                    out.push(DocLine {
                        line: i + 1,
                        text: doc.to_owned(),
                    });
                }
                i += 1;
                continue;
            }
            if let Some(doc) = trimmed.strip_prefix("///") {
                pending.push(DocLine {
                    line: i + 1,
                    text: doc.to_owned(),
                });
                i += 1;
                continue;
            }
            let code = code(raw);
            // Test modules are not documented.
            if bodies.is_empty() && trimmed.starts_with("#[cfg(test)]") {
                let next = lines.get(i + 1).map_or("", |l| l.trim_start());
                if next.starts_with("mod ") || next.starts_with("pub mod ") {
                    break;
                }
            }
            if in_attribute > 0 || trimmed.starts_with("#[") {
                // Attributes (perhaps over several lines) sit between docs and their item.
                in_attribute += code.matches('[').count() as i32 - code.matches(']').count() as i32;
                in_attribute = in_attribute.max(0);
                i += 1;
                continue;
            }
            if !trimmed.is_empty() && !trimmed.starts_with("//") {
                let public = match bodies.as_slice() {
                    // A variant of a pub enum, or an item of a pub trait.
                    [.., Body::PubEnum | Body::PubTrait] => true,
                    // A field of a pub enum's struct variant.
                    [.., Body::PubEnum, Body::Other] => true,
                    _ => is_pub_item(&code),
                };
                if public {
                    out.append(&mut pending);
                }
                pending.clear();
                let item = code.trim_start();
                let opens = code.matches('{').count();
                let closes = code.matches('}').count();
                if opens > closes {
                    let body = if is_pub_item(item) && item.contains(" enum ") {
                        Body::PubEnum
                    } else if is_pub_item(item) && item.contains(" trait ") {
                        Body::PubTrait
                    } else {
                        Body::Other
                    };
                    bodies.push(body);
                    for _ in 1..opens - closes {
                        bodies.push(Body::Other);
                    }
                } else {
                    for _ in opens..closes {
                        bodies.pop();
                    }
                }
            }
            i += 1;
        }
        out
    }

    /// Whether the `.rs` file at `path` (in a crate's `src`) is a crate root, or a `pub mod` of
    /// a parent that is itself public (a `pub mod` inside a private module is not rendered).
    fn module_is_public(path: &Path) -> bool {
        let file_name = |p: &Path| {
            p.file_name()
                .map_or(String::new(), |n| n.to_string_lossy().into_owned())
        };
        let name = file_name(path);
        if name == "lib.rs" {
            return true;
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        let (module, parent_dir) = if name == "mod.rs" {
            (
                file_name(dir),
                dir.parent().unwrap_or(Path::new(".")).to_path_buf(),
            )
        } else {
            (name.trim_end_matches(".rs").to_owned(), dir.to_path_buf())
        };
        let parents = [
            parent_dir.join("lib.rs"),
            parent_dir.join("mod.rs"),
            parent_dir.with_extension("rs"),
        ];
        let declaration = format!("pub mod {module};");
        parents.iter().any(|parent| {
            fs::read_to_string(parent)
                .is_ok_and(|text| text.lines().any(|l| l.trim() == declaration))
                && module_is_public(parent)
        })
    }

    /// What a public doc line must not say, or `None`. `imports`: the crates its examples may
    /// `use` (the documented crate first).
    fn finding(text: &str, imports: &[&str]) -> Option<String> {
        let lower = text.to_lowercase();
        if lower.contains("module doc") {
            return Some("points to module docs, which are not rendered".into());
        }
        let spec_number = lower
            .match_indices("spec ")
            .any(|(at, _)| lower[at + 5..].starts_with(|c: char| c.is_ascii_digit()));
        if text.contains('§') || lower.contains("spec section") || spec_number {
            return Some("cites a section of the repository's spec".into());
        }
        for dir in ["docs/", "examples/", "tests/", "crates/", "src/"] {
            let at = text.match_indices(dir).find(|(at, _)| {
                // `docs.rs/` and URLs are not this repository's folders.
                let before = &text[..*at];
                !before.ends_with('.') && !before.ends_with('/') && !before.contains("://")
            });
            if at.is_some() {
                return Some(format!("names the repository folder {dir}"));
            }
        }
        for ext in [".rs", ".md"] {
            for (at, _) in text.match_indices(ext) {
                let before = text[..at].chars().next_back();
                let after = text[at + ext.len()..].chars().next();
                let word_before = before.is_some_and(|c| c.is_alphanumeric() || c == '_');
                let word_ends = after.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
                let docs_rs = text[..at].ends_with("docs");
                if word_before && word_ends && !docs_rs {
                    return Some(format!("names a {ext} file of the repository"));
                }
            }
        }
        let code = text.trim_start();
        if let Some(path) = code.strip_prefix("use ") {
            let first = path
                .split("::")
                .next()
                .unwrap_or("")
                .trim_start_matches('{');
            if !imports.contains(&first) && WORKSPACE_CRATES.contains(&first) {
                return Some(format!("the example imports {first}, not {}", imports[0]));
            }
        }
        None
    }

    #[test]
    fn public_docs_stand_alone() {
        let root = workspace_root();
        let mut found = Vec::new();
        let mut scanned = 0;
        for (folder, imports) in PUBLISHED_CRATES {
            let mut files = Vec::new();
            rust_files(&root.join(folder).join("src"), &mut files);
            files.retain(|f| !f.components().any(|c| c.as_os_str() == "bin"));
            files.sort();
            for file in files {
                let text = fs::read_to_string(&file).expect("read a source file");
                let relative = file
                    .strip_prefix(&root)
                    .unwrap_or(&file)
                    .display()
                    .to_string();
                let docs = public_doc_lines(&text, module_is_public(&file));
                for (i, doc) in docs.iter().enumerate() {
                    scanned += 1;
                    // A phrase may wrap onto the next doc line ("see the module\n/// docs").
                    let next = docs.get(i + 1).filter(|n| n.line == doc.line + 1);
                    let why = finding(&doc.text, imports).or_else(|| {
                        let next = next?;
                        let joined = format!("{} {}", doc.text.trim_end(), next.text.trim_start());
                        finding(&joined, imports).filter(|_| finding(&next.text, imports).is_none())
                    });
                    if let Some(why) = why {
                        found.push(format!("{relative}:{}: {why}:{}", doc.line, doc.text));
                    }
                }
            }
        }
        assert!(scanned > 1000, "only {scanned} public doc lines found");
        assert!(
            found.is_empty(),
            "public docs that do not stand alone ({}):\n{}",
            found.len(),
            found.join("\n")
        );
    }

    #[test]
    fn the_scanner_finds_public_docs_only() {
        let text = "\
//! Crate docs, see docs/format.md.
use x;

/// A public item.
#[derive(Debug)]
pub struct A {
    /// A public field.
    pub a: u8,
    /// A private field.
    b: u8,
}

/// A private item.
struct B;

/// A public enum.
#[non_exhaustive]
pub enum C {
    /// A variant.
    #[error(
        \"x {y}\"
    )]
    V {
        /// A variant's field.
        f: u8,
    },
}

impl A {
    /// A public method.
    pub fn m(&self) {}
    /// A private method.
    fn n(&self) {}
}

/// A crate-private item.
pub(crate) fn p() {}

#[cfg(test)]
mod tests {
    /// A test helper.
    pub fn t() {}
}
";
        let texts: Vec<String> = public_doc_lines(text, true)
            .into_iter()
            .map(|d| d.text.trim().to_owned())
            .collect();
        assert_eq!(
            texts,
            [
                "Crate docs, see docs/format.md.",
                "A public item.",
                "A public field.",
                "A public enum.",
                "A variant.",
                "A variant's field.",
                "A public method.",
            ]
        );
        let private: Vec<String> = public_doc_lines(text, false)
            .into_iter()
            .map(|d| d.text.trim().to_owned())
            .collect();
        assert_eq!(private.first().map(String::as_str), Some("A public item."));
    }

    #[test]
    fn findings_name_what_does_not_stand_alone() {
        let seglog = &["seglog"][..];
        for bad in [
            " See the module docs for what it guarantees.",
            " The layout (spec §4.2).",
            " byte-compatible with Kafka (spec section 4)",
            " instead, see spec 7.4).",
            " (docs/format.md, deliberate differences)",
            " as `consumer.rs` does",
            " the README.md quick start",
            " see tests/it/crash.rs",
            " use seglog_records::BatchBuilder;",
        ] {
            assert!(finding(bad, seglog).is_some(), "{bad:?}");
        }
        for good in [
            " Kafka's `LogSegment.scala` keeps it.",
            " On docs.rs the features are listed.",
            " https://docs.rs/seglog/latest/seglog/",
            " use seglog::{Log, LogConfig};",
            " a segment's `.log` and `.index` files",
            " the LZ4 spec requires it",
        ] {
            assert!(finding(good, seglog).is_none(), "{good:?}");
        }
        assert!(finding(" use seglog_records::Batches;", &["seglog_records"]).is_none());
        assert!(finding(" use seglog::Log;", &["seglog_raft", "seglog"]).is_none());
    }
}

//! ARCHITECTURE.md stays true to the tree: every workspace crate is named
//! in it, and every repository path it names in backticks exists.
//!
//! A backticked token is taken for a path when it is made of path
//! characters only (letters, digits, `.`, `_`, `-`, `/`) and contains a
//! `/` or ends in `.rs`, `.toml`, `.md`, `.yaml` or `.proto`. URLs, globs,
//! placeholders (`<name>`, `$VAR`), API routes (a leading `/`), Rust paths
//! and commands hold other characters and are skipped. A `#fragment` is
//! ignored. Fenced code blocks are not read. Paths are relative to the
//! repository root.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod workspace;

use workspace::{package_name, read, root, workspace_members};

const EXTENSIONS: [&str; 5] = [".rs", ".toml", ".md", ".yaml", ".proto"];

/// The contents of the inline code spans of `markdown`, outside fenced
/// code blocks (a span may run over a line break).
fn code_spans(markdown: &str) -> Vec<String> {
    let mut prose = String::new();
    let mut fenced = false;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            prose.push_str(line);
            prose.push('\n');
        }
    }
    let chars: Vec<char> = prose.chars().collect();
    let run_at = |i: usize| chars[i..].iter().take_while(|c| **c == '`').count();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            i += 1;
            continue;
        }
        let open = run_at(i);
        let body = i + open;
        // The closing run: the next run of exactly as many backticks.
        let mut j = body;
        let mut close = None;
        while j < chars.len() {
            if chars[j] == '`' {
                let run = run_at(j);
                if run == open {
                    close = Some(j);
                    break;
                }
                j += run;
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => {
                let text: String = chars[body..end].iter().collect();
                spans.push(text.replace('\n', " ").trim().to_owned());
                i = end + open;
            }
            // No closing run: the backticks are literal.
            None => i = body,
        }
    }
    spans
}

/// The repository path a code span names, if it names one.
fn as_path(span: &str) -> Option<&str> {
    let path = span.split('#').next().unwrap_or(span);
    let path_chars = path
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/'));
    let looks_like_one = path.contains('/') || EXTENSIONS.iter().any(|ext| path.ends_with(ext));
    (!path.is_empty() && path_chars && !path.starts_with('/') && looks_like_one).then_some(path)
}

#[test]
fn the_helpers_read_what_they_should() {
    let toml = "[workspace]\nresolver = \"3\"\nmembers = [\n    \"engine/graph\", # core\n    \"api\",\n]\n\n\
                [workspace.package]\nname = \"not-this\"\n\n[package]\nname = \"svc-x\"\n";
    assert_eq!(workspace_members(toml), ["engine/graph", "api"]);
    assert_eq!(package_name(toml).as_deref(), Some("svc-x"));
    assert_eq!(workspace_members("[workspace]\nmembers = [\"a\", \"b\"]\n"), ["a", "b"]);

    let md = "See `src/main.rs` and ``a `b` c``, `x\ny`.\n```\n`in/a/fence.rs`\n```\nlast `Cargo.toml`";
    assert_eq!(code_spans(md), ["src/main.rs", "a `b` c", "x y", "Cargo.toml"]);

    for path in [
        "src/main.rs",
        "engine/graph/src/",
        "PERF.md",
        "docs/decisions.md#engine-crates",
    ] {
        assert!(as_path(path).is_some(), "{path} is a path");
    }
    assert_eq!(as_path("docs/decisions.md#engine-crates"), Some("docs/decisions.md"));
    for other in [
        "/api/v1/topology",
        "https://example.com/a.md",
        "plugins/<name>/",
        "$SVC_DATA_DIR/token",
        "engine/*/Cargo.toml",
        "svc_engine::graph",
        "cargo test --test architecture",
        "graph.redb",
        "svc-graph",
    ] {
        assert_eq!(as_path(other), None, "{other} is not a path");
    }
}

#[test]
fn architecture_names_every_workspace_crate() {
    let manifest = read(&root().join("Cargo.toml"));
    let members = workspace_members(&manifest);
    assert!(!members.is_empty(), "no workspace members found in Cargo.toml");
    let mut crates = vec![package_name(&manifest).expect("the root Cargo.toml has a [package] name")];
    for member in &members {
        let path = root().join(member).join("Cargo.toml");
        let name = package_name(&read(&path)).unwrap_or_else(|| panic!("{} has no package name", path.display()));
        crates.push(name);
    }
    let spans = code_spans(&read(&root().join("ARCHITECTURE.md")));
    let unnamed: Vec<&String> = crates.iter().filter(|c| !spans.contains(c)).collect();
    assert!(
        unnamed.is_empty(),
        "ARCHITECTURE.md does not name these workspace crates (each must appear in backticks, e.g. `svc-graph`): {unnamed:?}"
    );
}

#[test]
fn every_path_architecture_names_exists() {
    let spans = code_spans(&read(&root().join("ARCHITECTURE.md")));
    let paths: Vec<&str> = spans.iter().filter_map(|s| as_path(s)).collect();
    assert!(
        paths.len() >= 20,
        "only {} paths found in ARCHITECTURE.md: is the extraction broken?",
        paths.len()
    );
    let missing: Vec<&str> = paths.into_iter().filter(|p| !root().join(p).exists()).collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths that do not exist (relative to the repository root): {missing:?}"
    );
}

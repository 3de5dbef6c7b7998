//! No import cycle between the files of a crate (docs/decisions.md, "Engine
//! crates"): a file that names an item of another file through `crate::`,
//! `super::` or `self::` depends on it, and those dependencies form no
//! cycle; so does a module that names an item of its own child by the
//! child's bare name (`use view::Node`). A re-export (`pub use`) is not a
//! dependency, and test code (files named `tests*.rs` or `*_tests.rs`,
//! inline `#[cfg(test)]` modules) and comments are not read.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod workspace;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use workspace::{read, root, workspace_members};

type ModPath = Vec<String>;

/// The source folders of the workspace's crates: `src` of the root package
/// and of every member.
fn source_dirs() -> Vec<PathBuf> {
    let members = workspace_members(&read(&root().join("Cargo.toml")));
    std::iter::once(root().join("src"))
        .chain(members.iter().map(|m| root().join(m).join("src")))
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn is_test_file(path: &Path) -> bool {
    let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    name.starts_with("tests") || name.ends_with("_tests")
}

/// The module a file is: `graph/shard.rs` is `graph::shard`, `graph/mod.rs`
/// is `graph`, `lib.rs` and `main.rs` the crate root.
fn module_of(src: &Path, file: &Path) -> ModPath {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: ModPath = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// The text without comments, re-exports (`pub use`, `pub(crate) use`)
/// and inline `#[cfg(test)]` modules.
fn code(text: &str) -> String {
    let mut out = String::new();
    let mut in_reexport = false;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("//") {
            continue;
        }
        if t.starts_with("pub use ") || t.starts_with("pub(crate) use ") || t.starts_with("pub(super) use ") {
            in_reexport = true;
        }
        if in_reexport {
            in_reexport = !t.trim_end().ends_with(';');
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.pop();
    while let Some(at) = out.find("#[cfg(test)]") {
        let rest = &out[at..];
        let header_end = rest.find(['{', ';']).map_or(rest.len(), |i| i + 1);
        let is_inline_module = rest[..header_end].contains("mod ") && rest[..header_end].ends_with('{');
        if !is_inline_module {
            out.replace_range(at..at + "#[cfg(test)]".len(), "");
            continue;
        }
        let mut depth = 0usize;
        let mut end = rest.len();
        for (i, c) in rest.char_indices().skip(header_end - 1) {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.replace_range(at..at + end, "");
    }
    out
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every path that starts with `crate`, `super` or `self`, as segments,
/// with `use` groups (`use super::{a, b::c}`) expanded one level.
fn relative_paths(code: &str) -> Vec<(bool, usize, Vec<String>)> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    for head in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(i) = code[from..].find(head) {
            let at = from + i;
            from = at + head.len();
            if at > 0 && (is_ident_char(bytes[at - 1] as char) || bytes[at - 1] == b'$' || bytes[at - 1] == b':') {
                continue;
            }
            // The head itself: `super::super::` counts its levels.
            let mut supers = usize::from(head == "super::");
            let mut rest = &code[from..];
            while let Some(r) = rest.strip_prefix("super::") {
                supers += 1;
                rest = r;
            }
            let from_root = head == "crate::";
            if let Some(group) = rest.strip_prefix('{') {
                let inside = group.split('}').next().unwrap_or("");
                for item in inside.split(',') {
                    let segs = segments(item.trim());
                    if !segs.is_empty() {
                        out.push((from_root, supers, segs));
                    }
                }
            } else {
                out.push((from_root, supers, segments(rest)));
            }
        }
    }
    out
}

/// The leading `a::b::c` of `text`.
fn segments(text: &str) -> Vec<String> {
    let mut segs = Vec::new();
    let mut rest = text;
    loop {
        let end = rest.find(|c: char| !is_ident_char(c)).unwrap_or(rest.len());
        if end == 0 {
            break;
        }
        segs.push(rest[..end].to_owned());
        match rest[end..].strip_prefix("::") {
            Some(r) if !r.starts_with('{') => rest = r,
            _ => break,
        }
    }
    segs
}

/// The files of one crate, each with the files it depends on.
fn dependencies(src: &Path) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeMap<ModPath, PathBuf> = files
        .into_iter()
        .filter(|f| !is_test_file(f))
        .map(|f| (module_of(src, &f), f))
        .collect();
    let mut deps = BTreeMap::new();
    for (module, file) in &modules {
        let mut to = BTreeSet::new();
        let text = code(&read(file));
        for (from_root, supers, segs) in relative_paths(&text) {
            let mut path: ModPath = if from_root {
                Vec::new()
            } else {
                module[..module.len().saturating_sub(supers)].to_vec()
            };
            path.extend(segs);
            let target = (0..=path.len())
                .rev()
                .map(|k| &path[..k])
                .find(|p| modules.contains_key(*p));
            if let Some(target) = target
                && target != module.as_slice()
            {
                to.insert(target.to_vec());
            }
        }
        for child in children(&modules, module) {
            if names_child(&text, child.last().map_or("", String::as_str)) {
                to.insert(child.clone());
            }
        }
        deps.insert(module.clone(), to);
    }
    deps
}

/// The modules one level below `module`.
fn children<'a>(modules: &'a BTreeMap<ModPath, PathBuf>, module: &[String]) -> impl Iterator<Item = &'a ModPath> {
    modules
        .keys()
        .filter(move |m| m.len() == module.len() + 1 && m.starts_with(module))
}

/// Whether `code` names an item of its child `child` by the child's bare
/// name: `child::` at the head of a path (not after `::`, `.`, `$` or an
/// identifier character).
fn names_child(code: &str, child: &str) -> bool {
    let head = format!("{child}::");
    let bytes = code.as_bytes();
    let mut from = 0;
    while let Some(i) = code[from..].find(&head) {
        let at = from + i;
        from = at + head.len();
        let before = at.checked_sub(1).map(|b| bytes[b]);
        if !before.is_some_and(|b| is_ident_char(b as char) || matches!(b, b':' | b'.' | b'$')) {
            return true;
        }
    }
    false
}

/// The strongly connected components of more than one file (Tarjan).
fn cycles(deps: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<Vec<ModPath>> {
    struct State<'a> {
        deps: &'a BTreeMap<ModPath, BTreeSet<ModPath>>,
        index: BTreeMap<&'a ModPath, usize>,
        low: BTreeMap<&'a ModPath, usize>,
        stack: Vec<&'a ModPath>,
        on_stack: BTreeSet<&'a ModPath>,
        found: Vec<Vec<ModPath>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a ModPath) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.deps.get(v).into_iter().flatten() {
            let Some((w, _)) = s.deps.get_key_value(w) else {
                continue;
            };
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.clone());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                s.found.push(component);
            }
        }
    }
    let mut s = State {
        deps,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in deps.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.found
}

fn name(m: &ModPath) -> String {
    if m.is_empty() { "lib".to_owned() } else { m.join("/") }
}

#[test]
fn the_reader_finds_paths_and_cycles() {
    let found = relative_paths("use super::{a, b::c};\nlet x = crate::d::e(1); self::f; super::super::g::h;");
    let got: Vec<(bool, usize, String)> = found.into_iter().map(|(k, n, s)| (k, n, s.join("::"))).collect();
    assert_eq!(
        got,
        [
            (true, 0, "d::e".to_owned()),
            (false, 1, "a".to_owned()),
            (false, 1, "b::c".to_owned()),
            (false, 2, "g::h".to_owned()),
            (false, 0, "f".to_owned()),
        ]
    );
    assert_eq!(
        code("a\n// b\n#[cfg(test)]\nmod tests {\n  fn x() { y() }\n}\nc"),
        "a\n\nc"
    );
    assert_eq!(code("pub use a::{\n  b,\n};\nuse c::d;"), "use c::d;");
    let m = |s: &str| -> ModPath { s.split('/').map(str::to_owned).collect() };
    let deps: BTreeMap<ModPath, BTreeSet<ModPath>> = [
        (m("a"), [m("b")].into()),
        (m("b"), [m("c")].into()),
        (m("c"), [m("a")].into()),
        (m("d"), [m("a")].into()),
    ]
    .into();
    let found = cycles(&deps);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        found[0].iter().collect::<BTreeSet<_>>(),
        [m("a"), m("b"), m("c")].iter().collect()
    );
}

#[test]
fn no_crate_has_an_import_cycle_between_its_files() {
    let mut report = Vec::new();
    for src in source_dirs() {
        let deps = dependencies(&src);
        for cycle in cycles(&deps) {
            let files: Vec<String> = cycle.iter().map(name).collect();
            report.push(format!("{}: {}", src.display(), files.join(" <-> ")));
            for from in &cycle {
                for to in deps[from].iter().filter(|to| cycle.contains(to)) {
                    report.push(format!("    {} -> {}", name(from), name(to)));
                }
            }
        }
    }
    assert!(report.is_empty(), "import cycles between files:\n{}", report.join("\n"));
}

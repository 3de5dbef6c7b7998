//! The repository as the architecture tests read it: its root, its files,
//! and the workspace's members and package names from the Cargo manifests.

#![allow(dead_code, reason = "each test crate uses the part it needs")]

use std::path::Path;

pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The lines of the `[name]` table of a TOML file (comments removed), up to
/// the next table header.
fn table<'a>(toml: &'a str, name: &str) -> Vec<&'a str> {
    let header = format!("[{name}]");
    toml.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .skip_while(|l| *l != header)
        .skip(1)
        .take_while(|l| !l.starts_with('['))
        .collect()
}

/// The quoted strings of `members = [...]` in the `[workspace]` table.
pub fn workspace_members(toml: &str) -> Vec<String> {
    let lines = table(toml, "workspace");
    let Some(start) = lines.iter().position(|l| l.starts_with("members")) else {
        return Vec::new();
    };
    let mut text = String::new();
    for line in &lines[start..] {
        text.push_str(line);
        text.push('\n');
        if line.contains(']') {
            break;
        }
    }
    let list = text.split_once('[').map_or("", |(_, rest)| rest);
    let list = list.split_once(']').map_or(list, |(inside, _)| inside);
    list.split(',')
        .map(|item| item.trim().trim_matches('"').to_owned())
        .filter(|item| !item.is_empty())
        .collect()
}

/// `name` of the `[package]` table.
pub fn package_name(toml: &str) -> Option<String> {
    table(toml, "package").into_iter().find_map(|line| {
        let (key, value) = line.split_once('=')?;
        (key.trim() == "name").then(|| value.trim().trim_matches('"').to_owned())
    })
}

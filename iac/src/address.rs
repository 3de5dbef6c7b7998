//! Terraform resource addresses: `module.app["eu"].aws_ebs_volume.data[2]`.
//!
//! An address is the module path (each call's name, with its `count` or
//! `for_each` key when it has one), then the resource's type and name, then
//! the instance's key. Keys are written as Terraform writes them: numbers
//! bare, strings quoted with `"` and `\` escaped.

use std::fmt::{self, Write};

/// The key of one instance of a resource or module with `count` (a
/// number) or `for_each` (a string).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IndexKey {
    Int(i64),
    Str(String),
}

impl fmt::Display for IndexKey {
    /// `[2]` or `["eu-west-1"]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IndexKey::Int(i) => write!(f, "[{i}]"),
            IndexKey::Str(s) => {
                f.write_str("[\"")?;
                for ch in s.chars() {
                    match ch {
                        '"' => f.write_str("\\\"")?,
                        '\\' => f.write_str("\\\\")?,
                        '\n' => f.write_str("\\n")?,
                        c => f.write_char(c)?,
                    }
                }
                f.write_str("\"]")
            }
        }
    }
}

/// One step of a module path: `module.NAME` with an optional key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ModuleStep {
    pub name: String,
    pub key: Option<IndexKey>,
}

/// Why a module address does not read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("module address {address:?} does not read at byte {at}: {why}")]
pub struct AddressError {
    pub address: String,
    pub at: usize,
    pub why: &'static str,
}

/// Reads a state's `module` field (`module.app["eu"].module.db[0]`) into
/// its steps; the empty string is the root module.
pub fn parse_module(address: &str) -> Result<Vec<ModuleStep>, AddressError> {
    let mut steps = Vec::new();
    let mut rest = address;
    let fail = |rest: &str, why| AddressError {
        address: address.to_owned(),
        at: address.len() - rest.len(),
        why,
    };
    while !rest.is_empty() {
        if !steps.is_empty() {
            rest = rest.strip_prefix('.').ok_or_else(|| fail(rest, "expected '.'"))?;
        }
        rest = rest
            .strip_prefix("module.")
            .ok_or_else(|| fail(rest, "expected \"module.\""))?;
        let end = rest.find(['.', '[']).unwrap_or(rest.len());
        let name = &rest[..end];
        if name.is_empty() {
            return Err(fail(rest, "a module call has no name"));
        }
        rest = &rest[end..];
        let key = if rest.starts_with('[') {
            let (key, after) = parse_key(rest).ok_or_else(|| fail(rest, "a key is not a number or a quoted string"))?;
            rest = after;
            Some(key)
        } else {
            None
        };
        steps.push(ModuleStep {
            name: name.to_owned(),
            key,
        });
    }
    Ok(steps)
}

/// Reads `[2]` or `["a\"b"]` at the start of `text`: the key and what follows.
fn parse_key(text: &str) -> Option<(IndexKey, &str)> {
    let inner = text.strip_prefix('[')?;
    if let Some(quoted) = inner.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = quoted.char_indices();
        while let Some((i, ch)) = chars.next() {
            match ch {
                '\\' => match chars.next()?.1 {
                    'n' => out.push('\n'),
                    c => out.push(c),
                },
                '"' => {
                    let after = quoted[i + 1..].strip_prefix(']')?;
                    return Some((IndexKey::Str(out), after));
                }
                c => out.push(c),
            }
        }
        return None;
    }
    let close = inner.find(']')?;
    let n = inner[..close].parse().ok()?;
    Some((IndexKey::Int(n), &inner[close + 1..]))
}

/// The address of a resource instance: its module path, `data.` for a data
/// source, type, name and key.
pub fn instance_address(module: &str, mode: &str, ty: &str, name: &str, key: Option<&IndexKey>) -> String {
    let mut out = resource_address(module, mode, ty, name);
    if let Some(k) = key {
        let _ = write!(out, "{k}");
    }
    out
}

/// The address of a resource without an instance key, as a `removed`
/// block's `from` names it.
pub fn resource_address(module: &str, mode: &str, ty: &str, name: &str) -> String {
    let mut out = String::with_capacity(module.len() + ty.len() + name.len() + 8);
    if !module.is_empty() {
        out.push_str(module);
        out.push('.');
    }
    if mode == "data" {
        out.push_str("data.");
    }
    out.push_str(ty);
    out.push('.');
    out.push_str(name);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_paths_read_with_their_keys() {
        assert_eq!(parse_module(""), Ok(vec![]));
        let steps = parse_module(r#"module.app["eu.west"].module.db[0]"#).unwrap();
        assert_eq!(
            steps,
            vec![
                ModuleStep {
                    name: "app".into(),
                    key: Some(IndexKey::Str("eu.west".into()))
                },
                ModuleStep {
                    name: "db".into(),
                    key: Some(IndexKey::Int(0))
                },
            ]
        );
        let quoted = parse_module(r#"module.x["a\"]b"]"#).unwrap();
        assert_eq!(quoted[0].key, Some(IndexKey::Str("a\"]b".into())));
    }

    #[test]
    fn a_bad_module_path_says_where() {
        let e = parse_module("module.app.resource").unwrap_err();
        assert_eq!(e.at, 11);
        assert!(parse_module("module.").is_err());
        assert!(parse_module("module.a[x]").is_err());
        assert!(parse_module("module.a[\"open").is_err());
    }

    #[test]
    fn addresses_are_written_as_terraform_writes_them() {
        assert_eq!(
            instance_address(
                "module.app",
                "managed",
                "aws_ebs_volume",
                "data",
                Some(&IndexKey::Int(2))
            ),
            "module.app.aws_ebs_volume.data[2]"
        );
        assert_eq!(
            instance_address(
                "",
                "managed",
                "aws_s3_bucket",
                "logs",
                Some(&IndexKey::Str("a\"b".into()))
            ),
            r#"aws_s3_bucket.logs["a\"b"]"#
        );
        assert_eq!(
            instance_address("", "data", "aws_ami", "base", None),
            "data.aws_ami.base"
        );
        assert_eq!(resource_address("module.a[0]", "managed", "t", "n"), "module.a[0].t.n");
    }
}

//! How answers are printed: plain-text tables for people, the API's
//! answer as JSON or YAML for programs (`-o`).

use std::io::Write;

use serde_json::Value;

use super::remote::{Format, Remote};

/// Prints `v` as the JSON or YAML asked for and says so; false when the
/// format is for people (the verb prints its table).
pub fn structured(remote: &Remote, v: &Value) -> bool {
    match remote.format() {
        Format::Json => json(v),
        Format::Yaml => yaml(v),
        Format::Table | Format::Wide => return false,
    }
    true
}

/// Prints one item of a stream (an answer's event, a ledger event) for a
/// program and says so: a JSON line, or a YAML document of its own (`---`
/// before it, so `yq` or `safe_load_all` read the stream, and `...` after
/// it, so a reader following the stream knows it is whole without waiting
/// for the next), flushed as it comes; false when the format is for people.
pub fn streamed(remote: &Remote, v: &Value) -> bool {
    match remote.format() {
        Format::Json => println!("{v}"),
        Format::Yaml => {
            println!("---");
            yaml(v);
            println!("...");
        }
        Format::Table | Format::Wide => return false,
    }
    let _ = std::io::stdout().flush();
    true
}

/// Prints a value as YAML.
pub fn yaml(v: &Value) {
    match serde_yaml_ng::to_string(v) {
        Ok(text) => print!("{text}"),
        Err(_) => json(v),
    }
}

/// Prints rows as left-aligned columns under a header.
pub fn table(header: &[&str], rows: &[Vec<String>]) {
    let mut width: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if i < width.len() {
                width[i] = width[i].max(c.chars().count());
            }
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<w$}  ", w = width[i]));
            }
        }
        println!("{}", s.trim_end());
    };
    line(header.to_vec());
    for r in rows {
        line(r.iter().map(String::as_str).collect());
    }
}

/// A JSON value as text for a terminal, made printable ([`printable`]).
pub fn s(v: &Value, key: &str) -> String {
    match v.get(key) {
        Some(Value::String(x)) => printable(x),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

pub fn money(v: &Value, key: &str) -> String {
    format!("${:.2}", v.get(key).and_then(Value::as_f64).unwrap_or(0.0))
}

pub fn json(v: &Value) {
    println!("{}", serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string()));
}

/// Text as a terminal should show it: control characters (escape
/// sequences, line breaks) and bidirectional controls, which would let a
/// stored value recolour, reorder or forge the lines around it, written
/// as `\u{..}` escapes.
pub fn printable(text: &str) -> String {
    let hostile = |c: char| {
        c.is_control()
            || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !text.chars().any(hostile) {
        return text.to_owned();
    }
    text.chars()
        .map(|c| {
            if hostile(c) {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Lines of text as a terminal should show them: each line [`printable`],
/// the line breaks kept.
pub fn printable_lines(text: &str) -> String {
    text.lines().map(printable).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_text_cannot_forge_terminal_lines() {
        let v = serde_json::json!({"actor": "alice\u{1b}[31m\nAPPROVED BY: bob\u{202e}", "n": 3});
        assert_eq!(s(&v, "actor"), "alice\\u{1b}[31m\\u{a}APPROVED BY: bob\\u{202e}");
        assert_eq!(s(&v, "n"), "3");
        assert_eq!(printable("plain tëxt"), "plain tëxt");
    }
}

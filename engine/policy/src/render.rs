//! A CEL value written as CEL text: what dry-run reports as a condition's
//! value. The text reads back as the same value (`1u` is a uint, `1.0` a
//! double, `b"\x00"` bytes, `timestamp("...")`), so the type is never lost
//! as it would be in JSON; map entries are sorted by key text, so equal
//! values read the same.

use std::fmt::Write;

use cel::Value;
use chrono::{SecondsFormat, Utc};

/// `v` as CEL text.
pub fn cel_text(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v);
    out
}

fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::UInt(u) => {
            let _ = write!(out, "{u}u");
        }
        Value::Float(f) => write_double(out, *f),
        Value::String(s) => write_string(out, s),
        Value::Bytes(b) => write_bytes(out, b),
        Value::List(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, x);
            }
            out.push(']');
        }
        Value::Map(m) => {
            let mut entries: Vec<(String, String)> = m
                .map
                .iter()
                .map(|(k, v)| (cel_text(&Value::from(k)), cel_text(v)))
                .collect();
            entries.sort_unstable();
            out.push('{');
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                let _ = write!(out, "{k}: {v}");
            }
            out.push('}');
        }
        Value::Timestamp(t) => {
            let utc = t.with_timezone(&Utc).to_rfc3339_opts(SecondsFormat::AutoSi, true);
            let _ = write!(out, "timestamp(\"{utc}\")");
        }
        Value::Duration(d) => {
            let _ = write!(out, "duration(\"{}\")", duration_text(d));
        }
        Value::Function(name, _) => out.push_str(name),
        other => {
            let _ = write!(out, "{other:?}");
        }
    }
}

/// A double that reads back as a double: `1.0`, `1e300`, `double("NaN")`.
fn write_double(out: &mut String, f: f64) {
    if f.is_nan() {
        out.push_str("double(\"NaN\")");
    } else if f.is_infinite() {
        out.push_str(if f > 0.0 {
            "double(\"Infinity\")"
        } else {
            "double(\"-Infinity\")"
        });
    } else {
        let _ = write!(out, "{f:?}");
    }
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn write_bytes(out: &mut String, b: &[u8]) {
    out.push_str("b\"");
    for &x in b {
        match x {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(char::from(x)),
            _ => {
                let _ = write!(out, "\\x{x:02x}");
            }
        }
    }
    out.push('"');
}

/// Seconds with up to nine decimals, as CEL's `string(duration)` writes
/// them: `5400s`, `1.5s`, `-0.000000001s`.
fn duration_text(d: &chrono::Duration) -> String {
    let negative = *d < chrono::Duration::zero();
    let abs = if negative { -*d } else { *d };
    let secs = abs.num_seconds();
    let nanos = (abs - chrono::Duration::seconds(secs)).num_nanoseconds().unwrap_or(0);
    let sign = if negative { "-" } else { "" };
    if nanos == 0 {
        format!("{sign}{secs}s")
    } else {
        let frac = format!("{nanos:09}");
        format!("{sign}{secs}.{}s", frac.trim_end_matches('0'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cel::{Context, Program};

    fn text(src: &str) -> String {
        cel_text(&Program::compile(src).unwrap().execute(&Context::default()).unwrap())
    }

    #[test]
    fn values_keep_their_type() {
        assert_eq!(
            text("[1, 1u, 1.0, 'a\"', b'\\x00z', null, true]"),
            r#"[1, 1u, 1.0, "a\"", b"\x00z", null, true]"#
        );
        assert_eq!(text("{'b': 2, 'a': [1e300]}"), r#"{"a": [1e300], "b": 2}"#);
        assert_eq!(text("double('NaN')"), r#"double("NaN")"#);
        assert_eq!(text("-double('Infinity')"), r#"double("-Infinity")"#);
    }

    #[test]
    fn times_read_back() {
        assert_eq!(
            text("timestamp('2009-02-13T23:31:30.5+01:00')"),
            r#"timestamp("2009-02-13T22:31:30.500Z")"#
        );
        assert_eq!(text("duration('1h30m')"), r#"duration("5400s")"#);
        assert_eq!(text("duration('-1.25s')"), r#"duration("-1.25s")"#);
    }
}

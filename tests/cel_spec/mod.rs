//! The cel-spec conformance cases (`tests/fixtures/cel-spec/`): a reader
//! for the subset of the protobuf text format their files use, the cases
//! that need no bindings, and their expected results written as the CEL
//! text dry-run reports (`svc_policy::render`).

use std::fmt::Write;

/// A parsed text-format value: a scalar token or a message of fields in
/// the order written.
#[derive(Clone, Debug)]
pub enum Node {
    /// A quoted string's bytes.
    Str(Vec<u8>),
    /// An unquoted token: a number, `true`, an enum name.
    Word(String),
    Msg(Vec<(String, Node)>),
}

impl Node {
    pub fn fields(&self) -> &[(String, Node)] {
        match self {
            Node::Msg(f) => f,
            _ => &[],
        }
    }
    pub fn get(&self, name: &str) -> Option<&Node> {
        self.fields().iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Node> + 'a {
        self.fields().iter().filter(move |(n, _)| n == name).map(|(_, v)| v)
    }
    pub fn text(&self) -> String {
        match self {
            Node::Str(b) => String::from_utf8_lossy(b).into_owned(),
            Node::Word(w) => w.clone(),
            Node::Msg(_) => String::new(),
        }
    }
}

/// Parses a text-format document (the fields of its top message).
pub fn parse(src: &str) -> Result<Node, String> {
    let mut p = Parser {
        s: src.as_bytes(),
        i: 0,
    };
    let fields = p.fields(None)?;
    Ok(Node::Msg(fields))
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn skip(&mut self) {
        while self.i < self.s.len() {
            match self.s[self.i] {
                b' ' | b'\t' | b'\n' | b'\r' | b',' | b';' => self.i += 1,
                b'#' => {
                    while self.i < self.s.len() && self.s[self.i] != b'\n' {
                        self.i += 1;
                    }
                }
                _ => break,
            }
        }
    }

    fn err(&self, what: &str) -> String {
        let line = self.s[..self.i.min(self.s.len())]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1;
        format!("line {line}: {what}")
    }

    fn fields(&mut self, close: Option<u8>) -> Result<Vec<(String, Node)>, String> {
        let mut out = Vec::new();
        loop {
            self.skip();
            match (self.s.get(self.i), close) {
                (None, None) => return Ok(out),
                (None, Some(_)) => return Err(self.err("unterminated message")),
                (Some(c), Some(end)) if *c == end => {
                    self.i += 1;
                    return Ok(out);
                }
                _ => {}
            }
            let name = self.name()?;
            self.skip();
            if self.s.get(self.i) == Some(&b':') {
                self.i += 1;
                self.skip();
            }
            let value = self.value()?;
            out.push((name, value));
        }
    }

    fn name(&mut self) -> Result<String, String> {
        if self.s.get(self.i) == Some(&b'[') {
            let start = self.i;
            while self.i < self.s.len() && self.s[self.i] != b']' {
                self.i += 1;
            }
            self.i += 1;
            return Ok(String::from_utf8_lossy(&self.s[start..self.i.min(self.s.len())]).into_owned());
        }
        let w = self.word();
        if w.is_empty() {
            return Err(self.err("expected a field name"));
        }
        Ok(w)
    }

    fn word(&mut self) -> String {
        let start = self.i;
        while self.i < self.s.len()
            && (self.s[self.i].is_ascii_alphanumeric() || matches!(self.s[self.i], b'_' | b'.' | b'-' | b'+'))
        {
            self.i += 1;
        }
        String::from_utf8_lossy(&self.s[start..self.i]).into_owned()
    }

    fn value(&mut self) -> Result<Node, String> {
        match self.s.get(self.i) {
            Some(b'{') => {
                self.i += 1;
                Ok(Node::Msg(self.fields(Some(b'}'))?))
            }
            Some(b'<') => {
                self.i += 1;
                Ok(Node::Msg(self.fields(Some(b'>'))?))
            }
            Some(b'"' | b'\'') => {
                // Adjacent strings concatenate.
                let mut bytes = self.string()?;
                loop {
                    let save = self.i;
                    self.skip();
                    if matches!(self.s.get(self.i), Some(b'"' | b'\'')) {
                        bytes.extend(self.string()?);
                    } else {
                        self.i = save;
                        break;
                    }
                }
                Ok(Node::Str(bytes))
            }
            Some(_) => {
                let w = self.word();
                if w.is_empty() {
                    return Err(self.err("expected a value"));
                }
                Ok(Node::Word(w))
            }
            None => Err(self.err("expected a value")),
        }
    }

    fn string(&mut self) -> Result<Vec<u8>, String> {
        let q = self.s[self.i];
        self.i += 1;
        let mut out = Vec::new();
        loop {
            let Some(&c) = self.s.get(self.i) else {
                return Err(self.err("unterminated string"));
            };
            self.i += 1;
            if c == q {
                return Ok(out);
            }
            if c != b'\\' {
                out.push(c);
                continue;
            }
            let Some(&e) = self.s.get(self.i) else {
                return Err(self.err("unterminated escape"));
            };
            self.i += 1;
            match e {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'r' => out.push(b'\r'),
                b'a' => out.push(0x07),
                b'b' => out.push(0x08),
                b'f' => out.push(0x0c),
                b'v' => out.push(0x0b),
                b'0'..=b'7' => {
                    let mut v = u32::from(e - b'0');
                    for _ in 0..2 {
                        match self.s.get(self.i) {
                            Some(&d @ b'0'..=b'7') => {
                                v = v * 8 + u32::from(d - b'0');
                                self.i += 1;
                            }
                            _ => break,
                        }
                    }
                    out.push(v as u8);
                }
                b'x' | b'X' => {
                    let mut v = 0u32;
                    for _ in 0..2 {
                        match self.s.get(self.i).and_then(|d| char::from(*d).to_digit(16)) {
                            Some(d) => {
                                v = v * 16 + d;
                                self.i += 1;
                            }
                            None => break,
                        }
                    }
                    out.push(v as u8);
                }
                b'u' | b'U' => {
                    let n = if e == b'u' { 4 } else { 8 };
                    let hex = String::from_utf8_lossy(&self.s[self.i..(self.i + n).min(self.s.len())]).into_owned();
                    self.i += n;
                    let c = u32::from_str_radix(&hex, 16)
                        .ok()
                        .and_then(char::from_u32)
                        .ok_or_else(|| self.err("bad unicode escape"))?;
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                other => out.push(other),
            }
        }
    }
}

/// One selected case.
#[derive(Clone, Debug)]
pub struct Case {
    /// `file/section/test`.
    pub id: String,
    pub expr: String,
    pub expected: Expected,
}

#[derive(Clone, Debug)]
pub enum Expected {
    /// The value as CEL text, or why it cannot be written (a message type
    /// the daemon cannot build).
    Value(Result<String, String>),
    Error,
}

/// Names of protobuf message types: a case that names one needs the
/// conformance suite's type environment (its messages and wrappers), as a
/// `type_env` would declare it.
const PROTO_TYPES: [&str; 3] = ["TestAllTypes", "google.protobuf.", "conformance."];

/// The cases of a file that need no bindings: no `bindings`, `type_env` or
/// `container`, no protobuf message type named, not `check_only`, and with
/// a value or an evaluation error (or nothing: then the result is `true`)
/// as the expected result.
pub fn cases(file: &str, doc: &Node) -> Vec<Case> {
    let mut out = Vec::new();
    for section in doc.all("section") {
        let sname = section.get("name").map(Node::text).unwrap_or_default();
        for test in section.all("test") {
            let tname = test.get("name").map(Node::text).unwrap_or_default();
            let needs = ["bindings", "type_env", "container", "check_only", "disable_macros"];
            if needs.iter().any(|n| test.get(n).is_some()) {
                continue;
            }
            let others = ["unknown", "any_eval_errors", "any_unknowns", "typed_result"];
            if others.iter().any(|n| test.get(n).is_some()) {
                continue;
            }
            let expr = test.get("expr").map(Node::text).unwrap_or_default();
            if PROTO_TYPES.iter().any(|t| expr.contains(t)) {
                continue;
            }
            let expected = if let Some(v) = test.get("value") {
                Expected::Value(cel_text(v))
            } else if test.get("eval_error").is_some() {
                Expected::Error
            } else {
                Expected::Value(Ok("true".to_owned()))
            };
            out.push(Case {
                id: format!("{file}/{sname}/{tname}"),
                expr,
                expected,
            });
        }
    }
    out
}

/// A `cel.expr.Value` as the CEL text dry-run writes.
pub fn cel_text(v: &Node) -> Result<String, String> {
    let (kind, x) = v.fields().first().ok_or("empty value")?;
    Ok(match kind.as_str() {
        "null_value" => "null".to_owned(),
        "bool_value" => x.text(),
        "int64_value" => x.text().parse::<i64>().map_err(|e| e.to_string())?.to_string(),
        "uint64_value" => format!("{}u", x.text().parse::<u64>().map_err(|e| e.to_string())?),
        "double_value" => double_text(&x.text())?,
        "string_value" => match x {
            Node::Str(b) => string_text(&String::from_utf8(b.clone()).map_err(|e| e.to_string())?),
            w => string_text(&w.text()),
        },
        "bytes_value" => match x {
            Node::Str(b) => bytes_text(b),
            _ => return Err("bytes_value is not a string".to_owned()),
        },
        "list_value" => {
            let items: Vec<String> = x.all("values").map(cel_text).collect::<Result<_, _>>()?;
            format!("[{}]", items.join(", "))
        }
        "map_value" => {
            let mut entries: Vec<(String, String)> = x
                .all("entries")
                .map(|e| {
                    let k = cel_text(e.get("key").ok_or("map entry without key")?)?;
                    let v = cel_text(e.get("value").ok_or("map entry without value")?)?;
                    Ok((k, v))
                })
                .collect::<Result<_, String>>()?;
            entries.sort_unstable();
            let parts: Vec<String> = entries.iter().map(|(k, v)| format!("{k}: {v}")).collect();
            format!("{{{}}}", parts.join(", "))
        }
        "type_value" => x.text(),
        "object_value" => {
            let (ty, body) = x.fields().first().ok_or("empty object")?;
            let num = |f: &str| {
                body.get(f)
                    .map_or(Ok(0), |n| n.text().parse::<i64>().map_err(|e| e.to_string()))
            };
            match ty.as_str() {
                "[type.googleapis.com/google.protobuf.Duration]" => duration_text(num("seconds")?, num("nanos")?),
                "[type.googleapis.com/google.protobuf.Timestamp]" => {
                    let t = chrono::DateTime::from_timestamp(num("seconds")?, num("nanos")? as u32)
                        .ok_or("timestamp out of range")?;
                    format!(
                        "timestamp(\"{}\")",
                        t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
                    )
                }
                other => return Err(format!("a {other} message")),
            }
        }
        other => return Err(format!("a {other}")),
    })
}

fn double_text(t: &str) -> Result<String, String> {
    let f: f64 = match t.to_ascii_lowercase().as_str() {
        "inf" | "infinity" => f64::INFINITY,
        "-inf" | "-infinity" => f64::NEG_INFINITY,
        "nan" => f64::NAN,
        s => s.parse().map_err(|e| format!("double {t:?}: {e}"))?,
    };
    Ok(if f.is_nan() {
        "double(\"NaN\")".to_owned()
    } else if f.is_infinite() {
        if f > 0.0 {
            "double(\"Infinity\")"
        } else {
            "double(\"-Infinity\")"
        }
        .to_owned()
    } else {
        format!("{f:?}")
    })
}

fn string_text(s: &str) -> String {
    let mut out = String::from("\"");
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
    out
}

fn bytes_text(b: &[u8]) -> String {
    let mut out = String::from("b\"");
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
    out
}

fn duration_text(seconds: i64, nanos: i64) -> String {
    let total = i128::from(seconds) * 1_000_000_000 + i128::from(nanos);
    let sign = if total < 0 { "-" } else { "" };
    let abs = total.unsigned_abs();
    let (s, n) = (abs / 1_000_000_000, abs % 1_000_000_000);
    if n == 0 {
        format!("duration(\"{sign}{s}s\")")
    } else {
        let frac = format!("{n:09}");
        format!("duration(\"{sign}{s}.{}s\")", frac.trim_end_matches('0'))
    }
}

//! A one-pass scanner for a node's JSON properties document: finds the
//! top-level entries without building a `serde_json::Value` tree.
//!
//! It only answers for documents it fully understands: a JSON object whose
//! keys have no escapes, nested no deeper than [`MAX_DEPTH`]. Anything else
//! (invalid JSON, another top-level type, escaped keys) gives `None`, and the
//! caller falls back to `serde_json`, which decides and words the rejection.
//! It reads bytes and checks that they are UTF-8 as it goes (JSON outside
//! strings is ASCII; a string's other characters are checked one by one),
//! so a document it accepts is text without a pass of its own for that.
//! Entries come out in document order; [`sort_dedup`] puts them as
//! `serde_json::Map` would hold them: sorted by key, the last of duplicate
//! keys winning. (A caller that knows a document's usual keys compares them
//! first, and sorts only when they differ.)

/// Nesting accepted by the scanner; deeper documents go to `serde_json`.
const MAX_DEPTH: usize = 100;

/// A byte range of the document.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Range {
    pub start: u32,
    pub end: u32,
}

impl Range {
    pub fn of(self, doc: &str) -> &str {
        doc.get(self.start as usize..self.end as usize).unwrap_or("")
    }

    /// [`Range::of`] as bytes, without the character boundary checks.
    pub fn bytes(self, doc: &str) -> &[u8] {
        doc.as_bytes()
            .get(self.start as usize..self.end as usize)
            .unwrap_or_default()
    }
}

/// One value, by position in the document.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Tok {
    Null,
    Bool(bool),
    /// An integer of at most 18 digits: exactly an `i64`, as `serde_json` reads it.
    Int(i64),
    /// A decimal fraction without exponent and of at most 15 digits in
    /// all, as the bits of the `f64` it reads as (see [`decimal`]).
    Float(u64),
    /// Any other number (a longer fraction, an exponent, `-0`, a long
    /// integer): its text.
    Number(Range),
    /// A string: the text between the quotes, and whether it has escapes.
    Str(Range, bool),
    /// An array or object: its JSON text.
    Nested(Range),
}

/// One `key: value` entry.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub key: Range,
    pub value: Tok,
}

struct Scanner<'a> {
    b: &'a [u8],
    pos: usize,
    /// A top-level array or object text known to be valid (see [`object`]).
    known: &'a str,
}

impl Scanner<'_> {
    fn ws(&mut self) {
        while let Some(c) = self.b.get(self.pos) {
            if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.pos += 1)
    }

    fn range(start: usize, end: usize) -> Range {
        Range {
            start: start as u32,
            end: end as u32,
        }
    }

    /// A string after its opening quote: its content and whether it has escapes.
    // Inlined, as `value` is: both run once or twice per entry, and a call
    // returning its `Option` through memory cost about as much as the scan.
    #[inline(always)]
    fn string(&mut self) -> Option<(Range, bool)> {
        let start = self.pos;
        let mut escaped = false;
        loop {
            self.pos += ascii_run(self.b.get(self.pos..)?);
            let c = *self.b.get(self.pos)?;
            match c {
                b'"' => {
                    let r = Self::range(start, self.pos);
                    self.pos += 1;
                    return Some((r, escaped));
                }
                b'\\' => {
                    escaped = true;
                    let e = *self.b.get(self.pos + 1)?;
                    match e {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.pos += 2,
                        b'u' => {
                            let hex = self.b.get(self.pos + 2..self.pos + 6)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            self.pos += 6;
                        }
                        _ => return None,
                    }
                }
                0..0x20 => return None,
                0x80.. => self.pos += utf8_char(self.b.get(self.pos..)?)?,
                _ => self.pos += 1,
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        self.pos - start
    }

    /// A number, by the JSON grammar.
    #[inline(always)]
    fn number(&mut self) -> Option<Tok> {
        let start = self.pos;
        let negative = self.eat(b'-').is_some();
        let int_start = self.pos;
        match self.peek()? {
            b'0' => self.pos += 1,
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return None,
        }
        let int_end = self.pos;
        let mut fraction = None;
        if self.eat(b'.').is_some() {
            let at = self.pos;
            if self.digits() == 0 {
                return None;
            }
            fraction = Some(at..self.pos);
        }
        let mut exponent = false;
        if matches!(self.peek(), Some(b'e' | b'E')) {
            exponent = true;
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return None;
            }
        }
        let digits = &self.b[int_start..int_end];
        match (fraction, exponent) {
            (None, false) if digits.len() <= 18 && !(negative && digits == b"0") => {
                let v = digits.iter().fold(0i64, |v, d| v * 10 + i64::from(d - b'0'));
                return Some(Tok::Int(if negative { -v } else { v }));
            }
            (Some(f), false) => {
                if let Some(v) = decimal(digits, self.b.get(f).unwrap_or_default()) {
                    return Some(Tok::Float((if negative { -v } else { v }).to_bits()));
                }
            }
            _ => {}
        }
        Some(Tok::Number(Self::range(start, self.pos)))
    }

    fn literal(&mut self, word: &[u8], tok: Tok) -> Option<Tok> {
        let end = self.pos + word.len();
        (self.b.get(self.pos..end)? == word).then(|| {
            self.pos = end;
            tok
        })
    }

    /// Any value; arrays and objects are checked, not decoded.
    #[inline(always)]
    fn value(&mut self, depth: usize) -> Option<Tok> {
        match self.peek()? {
            b'"' => {
                self.pos += 1;
                let (r, escaped) = self.string()?;
                Some(Tok::Str(r, escaped))
            }
            b'{' | b'[' => {
                let start = self.pos;
                if depth == 1 && !self.known.is_empty() && self.b[start..].starts_with(self.known.as_bytes()) {
                    // The same text as a value checked before: it ends
                    // where that one did, and is valid as that one was.
                    self.pos += self.known.len();
                } else {
                    self.nested(depth + 1)?;
                }
                Some(Tok::Nested(Self::range(start, self.pos)))
            }
            b't' => self.literal(b"true", Tok::Bool(true)),
            b'f' => self.literal(b"false", Tok::Bool(false)),
            b'n' => self.literal(b"null", Tok::Null),
            _ => self.number(),
        }
    }

    /// Skips an array or object, checking its syntax.
    fn nested(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        let close = match self.peek()? {
            b'{' => b'}',
            _ => b']',
        };
        self.pos += 1;
        self.ws();
        if self.eat(close).is_some() {
            return Some(());
        }
        loop {
            if close == b'}' {
                self.eat(b'"')?;
                self.string()?;
                self.ws();
                self.eat(b':')?;
                self.ws();
            }
            self.value(depth)?;
            self.ws();
            match self.peek()? {
                b',' => {
                    self.pos += 1;
                    self.ws();
                }
                c if c == close => {
                    self.pos += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// The entries of an object starting here (keys without escapes);
    /// whether their keys are exactly `expected`'s.
    // Inlined into the decoder, with the other steps a message takes for
    // each node or edge (`number`, CRN lookups, ids, key and content
    // hashes, property writes): as calls, their `Option`s and `Result`s
    // went through memory, read back whole from smaller stores, and
    // decoding ran 2-7% slower (docs/perf-log.md, plugin row's notes, nineteenth
    // round).
    #[inline(always)]
    fn entries(&mut self, out: &mut Vec<Entry>, expected: Option<Expected<'_>>) -> Option<bool> {
        self.eat(b'{')?;
        self.ws();
        if self.eat(b'}').is_some() {
            return Some(expected.is_some_and(|e| e.ends.is_empty()));
        }
        let mut matching = expected;
        loop {
            // The expected key, quoted, found where it is expected: a key
            // scanned before, so valid as it was. Anything else is scanned,
            // and the rest of the keys too.
            let at = out.len();
            let key = match matching.and_then(|e| e.key(at)) {
                Some(k)
                    if self.b.get(self.pos) == Some(&b'"')
                        && self.b.get(self.pos + 1..self.pos + 1 + k.len()) == Some(k)
                        && self.b.get(self.pos + 1 + k.len()) == Some(&b'"') =>
                {
                    let key = Self::range(self.pos + 1, self.pos + 1 + k.len());
                    self.pos += k.len() + 2;
                    key
                }
                _ => {
                    matching = None;
                    self.eat(b'"')?;
                    let (key, escaped) = self.string()?;
                    if escaped {
                        return None;
                    }
                    key
                }
            };
            self.ws();
            self.eat(b':')?;
            self.ws();
            let value = self.value(1)?;
            out.push(Entry { key, value });
            self.ws();
            match self.peek()? {
                b',' => {
                    self.pos += 1;
                    self.ws();
                }
                b'}' => {
                    self.pos += 1;
                    return Some(matching.is_some_and(|e| e.ends.len() == out.len()));
                }
                _ => return None,
            }
        }
    }
}

/// Keys an object is expected to hold, in order (a node type's last key
/// list): their text one after another, and where each ends. Each is a key
/// as the scanner read it from an earlier document (no quote, backslash or
/// control character): the same bytes between quotes are that key again.
#[derive(Copy, Clone, Debug)]
pub struct Expected<'e> {
    pub text: &'e str,
    pub ends: &'e [usize],
}

impl<'e> Expected<'e> {
    fn key(&self, i: usize) -> Option<&'e [u8]> {
        let start = match i {
            0 => 0,
            _ => *self.ends.get(i - 1)?,
        };
        // On character boundaries only: each key is whole text.
        self.text.get(start..*self.ends.get(i)?).map(str::as_bytes)
    }
}

/// Powers of ten up to the largest one an `f64` holds exactly.
const POW10: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// `int.frac` (digits only) as an `f64`, when it has at most 15 digits in
/// all: the digits as one integer `m` (below 2^53, so exact as an `f64`)
/// divided by `10^k` (`k` the fraction's digits, exact too). One rounded
/// division of exact operands is the correctly rounded value, which is
/// what `serde_json` (its exact fast path for such numbers) and
/// `str::parse` both give. `None` for longer numbers.
fn decimal(int: &[u8], frac: &[u8]) -> Option<f64> {
    if int.len() + frac.len() > 15 {
        return None;
    }
    let m = int.iter().chain(frac).fold(0u64, |m, d| m * 10 + u64::from(d - b'0'));
    Some(m as f64 / POW10.get(frac.len())?)
}

/// Bytes that end a run of plain string content: `"`, `\\` and control characters.
fn special(c: u8) -> bool {
    c == b'"' || c == b'\\' || c < 0x20
}

const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);

/// The high bit of each byte of `w` that is below `n` (`n` <= 0x80); exact
/// for the lowest such byte, which is all [`plain_run`] reads.
fn below(w: u64, n: u8) -> u64 {
    w.wrapping_sub(ONES * u64::from(n)) & !w & HIGHS
}

/// How many bytes at the start of `b` are plain ASCII string content:
/// neither special ([`special`]) nor above 0x7f.
fn ascii_run(b: &[u8]) -> usize {
    run::<true>(b)
}

/// The length of the UTF-8 character `b` starts with (its first byte
/// above 0x7f); `None` when `b` does not start with one.
fn utf8_char(b: &[u8]) -> Option<usize> {
    let len = match b.first()? {
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return None,
    };
    // Overlong forms, surrogates and code points past U+10FFFF included.
    std::str::from_utf8(b.get(..len)?).ok().map(|_| len)
}

/// How many bytes at the start of `b` are plain string content, eight at
/// a time.
pub fn plain_run(b: &[u8]) -> usize {
    run::<false>(b)
}

/// How many bytes at the start of `b` are neither special nor, when
/// `ASCII`, above 0x7f; eight at a time.
#[inline(always)]
fn run<const ASCII: bool>(b: &[u8]) -> usize {
    let mut words = b.chunks_exact(8);
    let mut at = 0;
    for chunk in &mut words {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(chunk);
        let w = u64::from_le_bytes(bytes);
        let mut hits =
            below(w ^ (ONES * u64::from(b'"')), 1) | below(w ^ (ONES * u64::from(b'\\')), 1) | below(w, 0x20);
        if ASCII {
            hits |= w & HIGHS;
        }
        if hits != 0 {
            return at + (hits.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    at + words
        .remainder()
        .iter()
        .take_while(|c| !special(**c) && (!ASCII || c.is_ascii()))
        .count()
}

/// The entries of the object `doc`, in document order, duplicates and
/// all, into `out`; `None` when the document needs `serde_json`.
///
/// `known` is the text of an array or object this scanner accepted as a
/// top-level value of an earlier document (or empty): a top-level value
/// that starts with that very text is that value, and is not checked
/// again. (Neighbouring nodes mostly carry the same tags object, word for
/// word.)
///
/// `expected`, when given, are the keys the document is expected to hold,
/// in order: each found where it is expected is compared as a whole
/// rather than scanned. The answer says whether the keys are exactly
/// those, and gives the document as the text it was found to be.
pub fn object<'d>(
    doc: &'d [u8],
    out: &mut Vec<Entry>,
    known: &str,
    expected: Option<Expected<'_>>,
) -> Option<(&'d str, bool)> {
    out.clear();
    let mut s = Scanner { b: doc, pos: 0, known };
    s.ws();
    let matched = s.entries(out, expected)?;
    s.ws();
    if s.pos != doc.len() {
        return None;
    }
    #[allow(unsafe_code)]
    // SAFETY: the scanner read every byte of `doc` and accepted it as
    // UTF-8: outside strings it takes only ASCII bytes (whitespace,
    // punctuation, digits, signs, `true`, `false`, `null`); inside them,
    // ASCII bytes (`ascii_run` and escapes) and whole characters that
    // `str::from_utf8` accepted (`utf8_char`); the rest are copies of
    // `str`s (an expected key, a known value), compared byte for byte.
    let text = unsafe { std::str::from_utf8_unchecked(doc) };
    Some((text, matched))
}

/// The entries of the object at `range` of `doc` (a [`Tok::Nested`]
/// already checked by [`object`]), sorted as [`sort_dedup`] leaves them;
/// `None` when it is not an object or needs `serde_json` (also to refuse
/// a value a repeated key replaces).
pub fn nested_object(doc: &str, range: Range, out: &mut Vec<Entry>) -> Option<()> {
    out.clear();
    let mut s = Scanner {
        b: doc.as_bytes().get(..range.end as usize)?,
        pos: range.start as usize,
        known: "",
    };
    s.entries(out, None)?;
    sort_dedup(doc, out).then_some(())
}

/// Sorts `out` by key, keeping the last of equal keys, as `serde_json::Map` holds them.
/// `false` when a value it drops is one `serde_json` refuses ([`reads`]).
pub fn sort_dedup(doc: &str, out: &mut Vec<Entry>) -> bool {
    if out.is_sorted_by(|a, b| a.key.bytes(doc) < b.key.bytes(doc)) {
        return true;
    }
    // Stable: among equal keys the last one written stays last.
    out.sort_by(|a, b| a.key.bytes(doc).cmp(b.key.bytes(doc)));
    let mut w = 0;
    let mut read = true;
    for r in 0..out.len() {
        if r + 1 < out.len() && out[r + 1].key.bytes(doc) == out[r].key.bytes(doc) {
            read &= reads(doc, out[r].value);
            continue;
        }
        out[w] = out[r];
        w += 1;
    }
    out.truncate(w);
    read
}

/// Whether `serde_json` reads the values of `entries` (in document order)
/// that the key order `kept` (positions in `entries`) leaves out: those of
/// a repeated key but the last ([`reads`]).
pub fn dropped_read(doc: &str, entries: &[Entry], kept: &[u32]) -> bool {
    entries
        .iter()
        .enumerate()
        .all(|(i, e)| kept.contains(&(i as u32)) || reads(doc, e.value))
}

/// Whether `serde_json` reads `value` of `doc`. It reads every value of a
/// document, also one that a later value of the same key replaces, and
/// refuses some the scanner only checks the grammar of: a number out of
/// range, a lone surrogate in an escaped string, either inside a nested
/// value.
fn reads(doc: &str, value: Tok) -> bool {
    let text = match value {
        Tok::Number(r) | Tok::Nested(r) => r.of(doc),
        // With its quotes.
        Tok::Str(r, true) => doc
            .get((r.start as usize).saturating_sub(1)..r.end as usize + 1)
            .unwrap_or_default(),
        Tok::Null | Tok::Bool(_) | Tok::Int(_) | Tok::Float(_) | Tok::Str(_, false) => return true,
    };
    serde_json::from_str::<serde_json::Value>(text).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(b: &[u8]) -> usize {
        b.iter().take_while(|c| !special(**c)).count()
    }

    #[test]
    fn plain_runs_end_at_the_first_special_byte() {
        let mut text: Vec<u8> = b"abcdefghijklmnopqrstuvwxyz0123456789".to_vec();
        text.extend([0xc3, 0xa9, 0xff, 0x7f, 0x80, 0x20, 0x21]);
        for len in 0..text.len() {
            for special_byte in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
                for at in 0..=len {
                    let mut b = text[..len].to_vec();
                    b.insert(at, special_byte);
                    assert_eq!(plain_run(&b), naive(&b), "{b:?}");
                    assert_eq!(plain_run(&b), at);
                }
            }
            assert_eq!(plain_run(&text[..len]), len);
        }
    }

    /// A top-level value that starts with the known text is taken whole
    /// without being read again; anything else is read as without it.
    #[test]
    fn known_values_are_taken_whole() {
        let known = r#"{"env":"prod","team":"a"}"#;
        let scan = |doc: &str, known: &str| {
            let mut out = Vec::new();
            object(doc.as_bytes(), &mut out, known, None).map(|_| {
                sort_dedup(doc, &mut out);
                out
            })
        };
        for doc in [
            r#"{"tags":{"env":"prod","team":"a"},"x":1}"#,
            r#"{"tags":{"env":"prod","team":"a"}}"#,
            r#"{"a":{"env":"prod","team":"a"},"tags":{"env":"prod","team":"b"}}"#,
            r#"{"tags":{"env":"prod","team":"ab"}}"#,
            r#"{"tags":{"env":"prod","team":"a"}x}"#,
            r#"{"tags":{"env":"prod","team":"a"},}"#,
            r#"{"tags":{"env":"prod","team":"a""#,
            r#"{"tags":{"env":"prod","team":{"env":"prod","team":"a"}}}"#,
            r#"{"tags":[{"env":"prod","team":"a"}]}"#,
        ] {
            assert_eq!(scan(doc, known), scan(doc, ""), "{doc}");
        }
        let out = scan(r#"{"tags":{"env":"prod","team":"a"},"x":1}"#, known).expect("scanned");
        assert_eq!(out[0].value, Tok::Nested(Range { start: 8, end: 33 }));
        // A value that only starts like the known text is read in full,
        // and refused here.
        assert_eq!(scan(r#"{"tags":{"a":1,"b":[}}"#, r#"{"a":1}"#), None);
        assert!(scan(r#"{"tags":{"a":1,"b":[]}}"#, r#"{"a":1}"#).is_some());
    }

    /// Short decimal fractions read as `serde_json` and `str::parse` read them.
    #[test]
    fn short_decimals_read_as_serde_json_reads_them() {
        let mut texts: Vec<String> = [
            "0.0",
            "-0.0",
            "2.0",
            "25.31",
            "0.05",
            "-17.5",
            "0.1",
            "0.3",
            "123456789012.345",
            "99999999999999.9",
            "0.000000000000001",
            "9007199254740.993",
            "1.000000000000000",
        ]
        .iter()
        .map(|t| t.to_string())
        .collect();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // 2 to 15 digits, split into a whole part and a fraction.
            let digits = 2 + (x % 14) as usize;
            let point = 1 + (x >> 8) as usize % (digits - 1);
            let all = format!("{:015}", x >> 12)
                .chars()
                .rev()
                .take(digits)
                .collect::<String>();
            let (int, frac) = all.split_at(point);
            let int = int.trim_start_matches('0');
            let int = if int.is_empty() { "0" } else { int };
            let sign = if x & 1 == 1 { "-" } else { "" };
            texts.push(format!("{sign}{int}.{frac}"));
        }
        for t in &texts {
            let doc = format!("{{\"v\":{t}}}");
            let mut out = Vec::new();
            object(doc.as_bytes(), &mut out, "", None).expect("scanned");
            let want: f64 = serde_json::from_str(t).expect("a number");
            assert_eq!(want.to_bits(), t.parse::<f64>().expect("a number").to_bits(), "{t}");
            match out[0].value {
                Tok::Float(bits) => assert_eq!(bits, want.to_bits(), "{t}"),
                other => assert!(t.bytes().filter(u8::is_ascii_digit).count() > 15, "{t}: {other:?}"),
            }
        }
        // Longer numbers and exponents are left to serde_json.
        for t in ["1234567890123456.5", "1.5e3", "1e2", "0.1234567890123456"] {
            let doc = format!("{{\"v\":{t}}}");
            let mut out = Vec::new();
            object(doc.as_bytes(), &mut out, "", None).expect("scanned");
            assert!(matches!(out[0].value, Tok::Number(_)), "{t}");
        }
    }

    /// `doc` scanned with `keys` expected, and without: the answer with
    /// them is the answer without, and says whether the keys are `keys`.
    fn agrees_with_expected(doc: &str, keys: &[&str]) {
        let (text, ends): (String, Vec<usize>) = keys.iter().fold((String::new(), Vec::new()), |(mut t, mut e), k| {
            t.push_str(k);
            e.push(t.len());
            (t, e)
        });
        let expected = Expected {
            text: &text,
            ends: &ends,
        };
        let (mut with, mut without) = (Vec::new(), Vec::new());
        let hinted = object(doc.as_bytes(), &mut with, "", Some(expected)).map(|(_, m)| m);
        let plain = object(doc.as_bytes(), &mut without, "", None).map(|(_, m)| m);
        assert_eq!(hinted.is_some(), plain.is_some(), "{doc} {keys:?}");
        assert_eq!(plain, hinted.map(|_| false), "{doc}: nothing matches without keys");
        if hinted.is_some() {
            assert_eq!(with, without, "{doc} {keys:?}");
            let found: Vec<&str> = without.iter().map(|e| e.key.of(doc)).collect();
            assert_eq!(hinted, Some(found == keys), "{doc} {keys:?}");
        }
    }

    /// Keys found where they are expected are taken as the scan would
    /// take them; a key that only starts like the expected one, one more
    /// or fewer, a space before a key, or an escape, are scanned.
    #[test]
    fn expected_keys_are_compared_whole_and_anything_else_scanned() {
        for (doc, keys) in [
            (r#"{"a":1,"bc":"x","d":{"e":2}}"#, &["a", "bc", "d"][..]),
            (r#"{"a":1,"bcd":"x","d":{"e":2}}"#, &["a", "bc", "d"]),
            (r#"{"a":1,"b":"x","d":{"e":2}}"#, &["a", "bc", "d"]),
            (r#"{"a":1,"bc":"x"}"#, &["a", "bc", "d"]),
            (r#"{"a":1,"bc":"x","d":2,"e":3}"#, &["a", "bc", "d"]),
            (r#"{"a":1, "bc":"x","d":2}"#, &["a", "bc", "d"]),
            (r#"{ "a" : 1 , "bc" : "x" , "d" : 2 }"#, &["a", "bc", "d"]),
            (r#"{"a":1,"b\"c":"x","d":2}"#, &["a", "b", "d"]),
            (r#"{"a":1,"bc":"x","d":2"#, &["a", "bc", "d"]),
            (r#"{"a":1,"bc","d":2}"#, &["a", "bc", "d"]),
            (r#"{"a":1,"bc":"x","d":2}"#, &["a", "bc", "d"]),
            (r#"{"a":1,"a":2}"#, &["a", "a"]),
            (r#"{}"#, &[]),
            (r#"{}"#, &["a"]),
            (r#"{"a":1}"#, &[]),
        ] {
            agrees_with_expected(doc, keys);
        }
    }

    proptest::proptest! {
        #[test]
        fn expected_keys_agree_with_the_plain_scan(
            doc in r#"\{( ?"[a-c\\"]{0,2}" ?: ?([0-9]{1,2}|"[a-c]{0,2}"|\{"a":1\}),?){0,4}\}"#,
            keys in proptest::collection::vec("[a-c]{0,2}", 0..5),
        ) {
            agrees_with_expected(&doc, &keys.iter().map(String::as_str).collect::<Vec<_>>());
            // And with the document's own keys expected, when it has any.
            let mut out = Vec::new();
            if object(doc.as_bytes(), &mut out, "", None).is_some() {
                let own: Vec<&str> = out.iter().map(|e| e.key.of(&doc)).collect();
                agrees_with_expected(&doc, &own);
            }
        }

        /// A document the scanner accepts is text: any bytes written into
        /// one (a character cut, a stray byte) are refused unless they
        /// leave it UTF-8.
        #[test]
        fn what_the_scanner_accepts_is_utf8(
            at in 0usize..64,
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 1..5),
        ) {
            let doc = r#"{"a":"é✓","k€y":[1,"𝄞",{"b":"ß"}],"tags":{"x":"ü"}}"#;
            let mut b = doc.as_bytes().to_vec();
            let at = at % b.len();
            b.splice(at..(at + bytes.len()).min(b.len()), bytes.iter().copied());
            let mut out = Vec::new();
            if let Some((text, _)) = object(&b, &mut out, r#"{"x":"ü"}"#, None) {
                proptest::prop_assert_eq!(Some(text), std::str::from_utf8(&b).ok());
            }
        }

        #[test]
        fn ascii_runs_agree_with_a_byte_loop(b in proptest::collection::vec(proptest::num::u8::ANY, 0..40)) {
            let naive = b.iter().take_while(|c| !special(**c) && c.is_ascii()).count();
            proptest::prop_assert_eq!(ascii_run(&b), naive);
        }

        #[test]
        fn plain_runs_agree_with_a_byte_loop(b in proptest::collection::vec(proptest::num::u8::ANY, 0..40)) {
            proptest::prop_assert_eq!(plain_run(&b), naive(&b));
        }
    }
}

//! Compact encodings of a node's properties and tags.
//!
//! Properties are `key -> value` with JSON types kept. They are stored as one
//! byte blob per node in the shard arena: for each entry the key symbol
//! (u32 LE), a tag byte and the payload. Arrays and objects keep their JSON
//! text. Tags are `key -> value` string pairs, both interned: eight bytes an entry.

use crate::ids::Sym;

const NULL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
const INT: u8 = 3;
const FLOAT: u8 = 4;
const STR: u8 = 5;
const JSON: u8 = 6;

/// A borrowed property value.
#[derive(Copy, Clone, PartialEq, Debug)]
pub enum ValueRef<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(&'a str),
    /// An array or object, as JSON text.
    Json(&'a str),
}

impl ValueRef<'_> {
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            ValueRef::Int(i) => Some(i as f64),
            ValueRef::Float(f) => Some(f),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            ValueRef::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// Appends property entries to a blob.
pub struct PropWriter<'a> {
    buf: &'a mut Vec<u8>,
}

impl<'a> PropWriter<'a> {
    pub fn new(buf: &'a mut Vec<u8>) -> PropWriter<'a> {
        PropWriter { buf }
    }
    fn key(&mut self, key: Sym, tag: u8) {
        let k = key.to_raw().to_le_bytes();
        self.buf.extend_from_slice(&[k[0], k[1], k[2], k[3], tag]);
    }
    /// An entry with an eight-byte value, written in one piece.
    fn fixed(&mut self, key: Sym, tag: u8, v: [u8; 8]) {
        let k = key.to_raw().to_le_bytes();
        self.buf.extend_from_slice(&[
            k[0], k[1], k[2], k[3], tag, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7],
        ]);
    }
    /// An entry with a length-prefixed value: key, tag and length in one piece.
    fn bytes(&mut self, key: Sym, tag: u8, s: &str) {
        let len = u32::try_from(s.len()).unwrap_or(u32::MAX);
        let (k, l) = (key.to_raw().to_le_bytes(), len.to_le_bytes());
        self.buf.reserve(9 + len as usize);
        self.buf
            .extend_from_slice(&[k[0], k[1], k[2], k[3], tag, l[0], l[1], l[2], l[3]]);
        self.buf.extend_from_slice(&s.as_bytes()[..len as usize]);
    }
    pub fn null(&mut self, key: Sym) {
        self.key(key, NULL);
    }
    pub fn bool(&mut self, key: Sym, v: bool) {
        self.key(key, if v { TRUE } else { FALSE });
    }
    pub fn int(&mut self, key: Sym, v: i64) {
        self.fixed(key, INT, v.to_le_bytes());
    }
    pub fn float(&mut self, key: Sym, v: f64) {
        self.fixed(key, FLOAT, v.to_le_bytes());
    }
    #[inline(always)]
    pub fn str(&mut self, key: Sym, v: &str) {
        self.bytes(key, STR, v);
    }
    /// An array or object given as JSON text (the caller has validated it).
    pub fn json(&mut self, key: Sym, v: &str) {
        self.bytes(key, JSON, v);
    }
    pub fn value(&mut self, key: Sym, v: ValueRef<'_>) {
        match v {
            ValueRef::Null => self.null(key),
            ValueRef::Bool(b) => self.bool(key, b),
            ValueRef::Int(i) => self.int(key, i),
            ValueRef::Float(f) => self.float(key, f),
            ValueRef::Str(s) => self.str(key, s),
            ValueRef::Json(s) => self.json(key, s),
        }
    }
}

/// Iterates the entries of a property blob. A malformed blob (never written
/// by [`PropWriter`]) ends the iteration instead of panicking.
#[derive(Clone)]
pub struct Props<'a> {
    buf: &'a [u8],
}

impl<'a> Props<'a> {
    pub fn new(buf: &'a [u8]) -> Props<'a> {
        Props { buf }
    }
    /// The value of `key`, if present (last entry wins). Skips the other
    /// entries by their lengths without decoding them.
    pub fn get(&self, key: Sym) -> Option<ValueRef<'a>> {
        let want = key.to_raw();
        let mut found = None;
        for (k, at) in self.offsets() {
            if k.to_raw() == want {
                found = Some(at);
            }
        }
        // Decodes just the entry found (and checks it as the iterator would).
        self.at(found?)
    }
    /// Each entry's key and where it starts, skipping the values by their
    /// lengths without decoding them. A malformed blob ends the iteration.
    pub fn offsets(&self) -> Offsets<'a> {
        Offsets { buf: self.buf, at: 0 }
    }
    /// The value of the entry starting at `offset` (from [`Props::offsets`]).
    pub fn at(&self, offset: usize) -> Option<ValueRef<'a>> {
        Props::new(self.buf.get(offset..)?).next().map(|(_, v)| v)
    }
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The entries whose key `want` accepts, in order. The others are
    /// skipped by their lengths without being decoded.
    pub fn matching<F: Fn(Sym) -> bool>(&self, want: F) -> Matching<'a, F> {
        Matching { buf: self.buf, want }
    }
}

/// Iterator of [`Props::matching`].
pub struct Matching<'a, F> {
    buf: &'a [u8],
    want: F,
}

impl<'a, F: Fn(Sym) -> bool> Iterator for Matching<'a, F> {
    type Item = (Sym, ValueRef<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let b = self.buf;
            if b.len() < 5 {
                self.buf = &[];
                return None;
            }
            let skip = entry_len(b).unwrap_or(usize::MAX);
            let (Some(entry), Some(rest)) = (b.get(..skip), b.get(skip..)) else {
                // Malformed: the iteration ends, as [`Props`]' own does.
                self.buf = &[];
                return None;
            };
            self.buf = rest;
            let key = Sym::from_raw(u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            if key.is_some_and(|k| (self.want)(k)) {
                return Props::new(entry).next();
            }
        }
    }
}

/// Iterator of [`Props::offsets`].
pub struct Offsets<'a> {
    buf: &'a [u8],
    at: usize,
}

impl Iterator for Offsets<'_> {
    type Item = (Sym, usize);

    fn next(&mut self) -> Option<(Sym, usize)> {
        let b = self.buf;
        let Some(rest) = entry_len(b).and_then(|len| b.get(len..)) else {
            self.buf = &[];
            return None;
        };
        let key = Sym::from_raw(u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        let at = self.at;
        self.at += b.len() - rest.len();
        self.buf = rest;
        match key {
            Some(key) => Some((key, at)),
            None => {
                self.buf = &[];
                None
            }
        }
    }
}

/// The length of the entry at the start of `b` (key, tag and value), or
/// `None` when it is malformed.
fn entry_len(b: &[u8]) -> Option<usize> {
    if b.len() < 5 {
        return None;
    }
    match (b[4], b.get(5..9)) {
        (NULL | FALSE | TRUE, _) => Some(5),
        (INT | FLOAT, _) => Some(13),
        (STR | JSON, Some(len)) => Some(9 + u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize),
        _ => None,
    }
}

fn take<'a>(buf: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if buf.len() < n {
        return None;
    }
    let (head, tail) = buf.split_at(n);
    *buf = tail;
    Some(head)
}

fn take_u32(buf: &mut &[u8]) -> Option<u32> {
    take(buf, 4).and_then(|b| b.try_into().ok()).map(u32::from_le_bytes)
}

fn take_u64(buf: &mut &[u8]) -> Option<u64> {
    take(buf, 8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes)
}

fn take_str<'a>(buf: &mut &'a [u8]) -> Option<&'a str> {
    let len = take_u32(buf)? as usize;
    std::str::from_utf8(take(buf, len)?).ok()
}

impl<'a> Iterator for Props<'a> {
    type Item = (Sym, ValueRef<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        let mut b = self.buf;
        let item = (|| {
            let key = Sym::from_raw(take_u32(&mut b)?)?;
            let tag = *take(&mut b, 1)?.first()?;
            let v = match tag {
                NULL => ValueRef::Null,
                FALSE => ValueRef::Bool(false),
                TRUE => ValueRef::Bool(true),
                INT => ValueRef::Int(take_u64(&mut b)? as i64),
                FLOAT => ValueRef::Float(f64::from_bits(take_u64(&mut b)?)),
                STR => ValueRef::Str(take_str(&mut b)?),
                JSON => ValueRef::Json(take_str(&mut b)?),
                _ => return None,
            };
            Some((key, v))
        })();
        self.buf = if item.is_some() { b } else { &[] };
        item
    }
}

/// Appends a tag entry to a tag blob.
pub fn write_tag(buf: &mut Vec<u8>, key: Sym, value: Sym) {
    let pair = u64::from(key.to_raw()) | u64::from(value.to_raw()) << 32;
    buf.extend_from_slice(&pair.to_le_bytes());
}

/// Iterates the `(key, value)` entries of a tag blob.
#[derive(Clone)]
pub struct Tags<'a> {
    buf: &'a [u8],
}

impl<'a> Tags<'a> {
    pub fn new(buf: &'a [u8]) -> Tags<'a> {
        Tags { buf }
    }
    pub fn get(&self, key: Sym) -> Option<Sym> {
        self.clone().find(|(k, _)| *k == key).map(|(_, v)| v)
    }
}

impl Iterator for Tags<'_> {
    type Item = (Sym, Sym);
    fn next(&mut self) -> Option<Self::Item> {
        let mut b = self.buf;
        let item = (|| Some((Sym::from_raw(take_u32(&mut b)?)?, Sym::from_raw(take_u32(&mut b)?)?)))();
        self.buf = if item.is_some() { b } else { &[] };
        item
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intern::Interner;

    /// `get`, `matching` and `offsets` agree with the iterator: last entry
    /// wins, truncation ends the blob.
    #[test]
    fn get_matches_the_iterator() {
        let i = Interner::new();
        let (a, b, c) = (i.intern("a"), i.intern("b"), i.intern("c"));
        let mut buf = Vec::new();
        let mut w = PropWriter::new(&mut buf);
        w.str(a, "first");
        w.int(b, 7);
        w.json(c, "[1,2]");
        w.null(b);
        w.str(a, "second");
        w.float(c, 1.5);
        for cut in 0..=buf.len() {
            let p = Props::new(&buf[..cut]);
            for k in [a, b, c, i.intern("d")] {
                let want = p.clone().filter(|(x, _)| *x == k).last().map(|(_, v)| v);
                assert_eq!(p.get(k), want, "key {k:?} in the first {cut} bytes");
            }
            let entries: Vec<_> = p.clone().collect();
            let located: Vec<_> = p.offsets().map(|(k, at)| (k, p.at(at))).collect();
            assert_eq!(located.len(), entries.len(), "entries in the first {cut} bytes");
            for ((k, v), (lk, lv)) in entries.iter().zip(&located) {
                assert_eq!((k, Some(*v)), (lk, *lv), "in the first {cut} bytes");
            }
            for keys in [vec![a], vec![b, c], vec![a, b, c], vec![]] {
                let want: Vec<_> = p.clone().filter(|(x, _)| keys.contains(x)).collect();
                let got: Vec<_> = p.matching(|x| keys.contains(&x)).collect();
                assert_eq!(got, want, "keys {keys:?} in the first {cut} bytes");
            }
        }
    }

    #[test]
    fn properties_round_trip_with_types() {
        let i = Interner::new();
        let (a, b, c, d, e, f) = (
            i.intern("a"),
            i.intern("b"),
            i.intern("c"),
            i.intern("d"),
            i.intern("e"),
            i.intern("f"),
        );
        let mut buf = Vec::new();
        let mut w = PropWriter::new(&mut buf);
        w.null(a);
        w.bool(b, true);
        w.int(c, -42);
        w.float(d, 1.5);
        w.str(e, "gp2 ünïcode");
        w.json(f, "[1,2,{\"x\":null}]");
        let got: Vec<_> = Props::new(&buf).collect();
        assert_eq!(
            got,
            vec![
                (a, ValueRef::Null),
                (b, ValueRef::Bool(true)),
                (c, ValueRef::Int(-42)),
                (d, ValueRef::Float(1.5)),
                (e, ValueRef::Str("gp2 ünïcode")),
                (f, ValueRef::Json("[1,2,{\"x\":null}]")),
            ]
        );
        assert_eq!(Props::new(&buf).get(c), Some(ValueRef::Int(-42)));
    }

    #[test]
    fn malformed_blobs_stop_without_panicking() {
        let i = Interner::new();
        let k = i.intern("k");
        let mut buf = Vec::new();
        PropWriter::new(&mut buf).str(k, "hello");
        for cut in 0..buf.len() {
            let n = Props::new(&buf[..cut]).count();
            assert_eq!(n, 0, "cut at {cut}");
        }
        assert_eq!(Props::new(&[0, 0, 0, 0, 2]).count(), 0);
        assert_eq!(Props::new(&[1, 0, 0, 0, 99]).count(), 0);
    }

    #[test]
    fn tags_round_trip() {
        let i = Interner::new();
        let (k1, v1, k2, v2) = (i.intern("env"), i.intern("prod"), i.intern("team"), i.intern("core"));
        let mut buf = Vec::new();
        write_tag(&mut buf, k1, v1);
        write_tag(&mut buf, k2, v2);
        assert_eq!(Tags::new(&buf).collect::<Vec<_>>(), vec![(k1, v1), (k2, v2)]);
        assert_eq!(Tags::new(&buf).get(k2), Some(v2));
        assert_eq!(Tags::new(&buf[..5]).count(), 0);
    }
}

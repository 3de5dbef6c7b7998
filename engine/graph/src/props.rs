//! Compact encodings of a node's properties and tags.
//!
//! Properties are `key -> value` with JSON types kept, one byte blob per
//! node in the shard arena. An entry is the key's symbol as a LEB128
//! varint, a head byte (the value's type in its low three bits, a small
//! payload in its high five) and the rest of the value: a small integer or
//! a short text's length fits in the head. Arrays and objects keep their
//! JSON text. Tags are `key -> value` string pairs, both interned: two
//! varints an entry. docs/formats.md, "Tag and property blobs", has the
//! layout; [`v1`] rewrites the fixed-width layout stored before it.

use crate::ids::Sym;

const NULL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
const INT: u8 = 3;
const FLOAT: u8 = 4;
const STR: u8 = 5;
const JSON: u8 = 6;
/// A float that an `f32` holds exactly, in four bytes.
const FLOAT32: u8 = 7;
/// The head's high bits when the integer or length does not fit in them
/// and follows as a varint.
const LONG: u8 = 31;

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

/// Appends `v` as a LEB128 varint.
#[inline]
pub(crate) fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push(v as u8 | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Bytes [`put_varint`] writes for `v`.
pub(crate) fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// Reads a LEB128 varint of at most ten bytes; `None` when it runs past
/// the end or overflows 64 bits. One of one or two bytes (a key symbol
/// below 16,384, a blob shorter than that: nearly all) is read inline.
#[inline(always)]
pub(crate) fn take_varint(buf: &mut &[u8]) -> Option<u64> {
    let b: &[u8] = buf;
    match b {
        [b0, rest @ ..] if *b0 < 0x80 => {
            *buf = rest;
            Some(u64::from(*b0))
        }
        [b0, b1, rest @ ..] if *b1 < 0x80 => {
            *buf = rest;
            Some(u64::from(*b0 & 0x7f) | u64::from(*b1) << 7)
        }
        _ => take_long_varint(buf),
    }
}

#[inline(never)]
fn take_long_varint(buf: &mut &[u8]) -> Option<u64> {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let (&byte, rest) = buf.split_first()?;
        *buf = rest;
        let bits = u64::from(byte & 0x7f);
        if shift == 63 && bits > 1 {
            return None;
        }
        v |= bits << shift;
        if byte < 0x80 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

fn take_sym(buf: &mut &[u8]) -> Option<Sym> {
    Sym::from_raw(u32::try_from(take_varint(buf)?).ok()?)
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(z: u64) -> i64 {
    (z >> 1) as i64 ^ -((z & 1) as i64)
}

/// Appends property entries to a blob.
pub struct PropWriter<'a> {
    buf: &'a mut Vec<u8>,
}

impl<'a> PropWriter<'a> {
    pub fn new(buf: &'a mut Vec<u8>) -> PropWriter<'a> {
        PropWriter { buf }
    }
    /// The key and the head byte: type `ty`, `small` in the high bits.
    #[inline]
    fn head(&mut self, key: Sym, ty: u8, small: u8) {
        put_varint(self.buf, u64::from(key.to_raw()));
        self.buf.push(ty | small << 3);
    }
    /// An entry whose integer or length `n` goes in the head when it fits.
    #[inline]
    fn sized(&mut self, key: Sym, ty: u8, n: u64) {
        if n < u64::from(LONG) {
            self.head(key, ty, n as u8);
        } else {
            self.head(key, ty, LONG);
            put_varint(self.buf, n);
        }
    }
    fn bytes(&mut self, key: Sym, ty: u8, s: &str) {
        let len = u32::try_from(s.len()).unwrap_or(u32::MAX);
        self.buf.reserve(12 + len as usize);
        self.sized(key, ty, u64::from(len));
        self.buf.extend_from_slice(&s.as_bytes()[..len as usize]);
    }
    pub fn null(&mut self, key: Sym) {
        self.head(key, NULL, 0);
    }
    pub fn bool(&mut self, key: Sym, v: bool) {
        self.head(key, if v { TRUE } else { FALSE }, 0);
    }
    pub fn int(&mut self, key: Sym, v: i64) {
        self.sized(key, INT, zigzag(v));
    }
    pub fn float(&mut self, key: Sym, v: f64) {
        let narrow = v as f32;
        if f64::from(narrow).to_bits() == v.to_bits() {
            self.head(key, FLOAT32, 0);
            self.buf.extend_from_slice(&narrow.to_le_bytes());
        } else {
            self.head(key, FLOAT, 0);
            self.buf.extend_from_slice(&v.to_le_bytes());
        }
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

/// An entry's key and head, read from the front of `buf`.
#[inline]
fn take_head(buf: &mut &[u8]) -> Option<(Sym, u8, u8)> {
    let key = take_sym(buf)?;
    let (&head, rest) = buf.split_first()?;
    *buf = rest;
    Some((key, head & 7, head >> 3))
}

/// The integer or length of an entry whose head holds `small`.
#[inline]
fn take_sized(buf: &mut &[u8], small: u8) -> Option<u64> {
    if small < LONG {
        Some(u64::from(small))
    } else {
        take_varint(buf)
    }
}

/// Moves `buf` past the value of an entry of type `ty` without decoding it.
fn skip_value(buf: &mut &[u8], ty: u8, small: u8) -> Option<()> {
    let n = match ty {
        NULL | FALSE | TRUE if small == 0 => 0,
        INT => {
            take_sized(buf, small)?;
            0
        }
        FLOAT if small == 0 => 8,
        FLOAT32 if small == 0 => 4,
        STR | JSON => usize::try_from(take_sized(buf, small)?).ok()?,
        _ => return None,
    };
    take(buf, n).map(drop)
}

/// Reads the value of an entry of type `ty` from the front of `buf`.
fn take_value<'a>(buf: &mut &'a [u8], ty: u8, small: u8) -> Option<ValueRef<'a>> {
    Some(match ty {
        NULL if small == 0 => ValueRef::Null,
        FALSE if small == 0 => ValueRef::Bool(false),
        TRUE if small == 0 => ValueRef::Bool(true),
        INT => ValueRef::Int(unzigzag(take_sized(buf, small)?)),
        FLOAT if small == 0 => ValueRef::Float(f64::from_le_bytes(take(buf, 8)?.try_into().ok()?)),
        FLOAT32 if small == 0 => ValueRef::Float(f64::from(f32::from_le_bytes(take(buf, 4)?.try_into().ok()?))),
        STR | JSON => {
            let len = usize::try_from(take_sized(buf, small)?).ok()?;
            let text = std::str::from_utf8(take(buf, len)?).ok()?;
            if ty == STR {
                ValueRef::Str(text)
            } else {
                ValueRef::Json(text)
            }
        }
        _ => return None,
    })
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
        let mut found = None;
        for (k, at) in self.offsets() {
            if k == key {
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

    /// The values of each of `keys` (`None` for a key not interned), as
    /// [`Props::get`] gives them, in one walk of the entries instead of
    /// one a key.
    pub fn get_each<const N: usize>(&self, keys: [Option<Sym>; N]) -> [Option<ValueRef<'a>>; N] {
        let mut found = [None; N];
        for (k, at) in self.offsets() {
            for (want, slot) in keys.iter().zip(found.iter_mut()) {
                if *want == Some(k) {
                    *slot = Some(at);
                }
            }
        }
        found.map(|at| at.and_then(|at| self.at(at)))
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
            let mut b = self.buf;
            let item = take_head(&mut b).and_then(|(key, ty, small)| {
                if (self.want)(key) {
                    take_value(&mut b, ty, small).map(|v| Some((key, v)))
                } else {
                    skip_value(&mut b, ty, small).map(|()| None)
                }
            });
            match item {
                // Malformed: the iteration ends, as [`Props`]' own does.
                None => {
                    self.buf = &[];
                    return None;
                }
                Some(found) => {
                    self.buf = b;
                    if found.is_some() {
                        return found;
                    }
                }
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
        let mut b = self.buf;
        let Some(key) = take_head(&mut b).and_then(|(key, ty, small)| skip_value(&mut b, ty, small).map(|()| key))
        else {
            self.buf = &[];
            return None;
        };
        let at = self.at;
        self.at += self.buf.len() - b.len();
        self.buf = b;
        Some((key, at))
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

impl<'a> Iterator for Props<'a> {
    type Item = (Sym, ValueRef<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        let mut b = self.buf;
        let item = take_head(&mut b).and_then(|(key, ty, small)| Some((key, take_value(&mut b, ty, small)?)));
        self.buf = if item.is_some() { b } else { &[] };
        item
    }
}

/// Appends a tag entry to a tag blob.
pub fn write_tag(buf: &mut Vec<u8>, key: Sym, value: Sym) {
    put_varint(buf, u64::from(key.to_raw()));
    put_varint(buf, u64::from(value.to_raw()));
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
        let item = (|| Some((take_sym(&mut b)?, take_sym(&mut b)?)))();
        self.buf = if item.is_some() { b } else { &[] };
        item
    }
}

/// The fixed-width layout of stored node and edge versions of format 1:
/// a property entry was the key's symbol (`u32`), a type byte and the
/// value (`i64`, `f64`, or a `u32` length and the text); a tag entry two
/// `u32` symbols. Read only to be rewritten in the current layout.
pub mod v1 {
    use super::{FALSE, FLOAT, INT, JSON, NULL, PropWriter, STR, TRUE, ValueRef, take, write_tag};
    use crate::ids::Sym;

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

    /// A format 1 property blob in the current layout. Entries up to the
    /// first malformed one are kept: the rest was never read by format 1's
    /// own reader either.
    pub fn props(mut old: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(old.len());
        let mut w = PropWriter::new(&mut out);
        let b = &mut old;
        while let Some(key) = take_u32(b).and_then(Sym::from_raw) {
            let Some(&ty) = take(b, 1).and_then(|t| t.first()) else {
                break;
            };
            let value = match ty {
                NULL => Some(ValueRef::Null),
                FALSE | TRUE => Some(ValueRef::Bool(ty == TRUE)),
                INT => take_u64(b).map(|v| ValueRef::Int(v as i64)),
                FLOAT => take_u64(b).map(|v| ValueRef::Float(f64::from_bits(v))),
                STR => take_str(b).map(ValueRef::Str),
                JSON => take_str(b).map(ValueRef::Json),
                _ => None,
            };
            let Some(value) = value else {
                break;
            };
            w.value(key, value);
        }
        out
    }

    /// A format 1 tag blob in the current layout, up to its first malformed entry.
    pub fn tags(old: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(old.len() / 2);
        for pair in old.chunks_exact(8) {
            let word = |at: usize| u32::from_le_bytes([pair[at], pair[at + 1], pair[at + 2], pair[at + 3]]);
            let (Some(k), Some(v)) = (Sym::from_raw(word(0)), Sym::from_raw(word(4))) else {
                break;
            };
            write_tag(&mut out, k, v);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intern::Interner;

    /// `get`, `get_each`, `matching` and `offsets` agree with the iterator:
    /// last entry wins, truncation ends the blob.
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
            let d = i.intern("d");
            let each = p.get_each([Some(c), None, Some(a), Some(d), Some(a), Some(b)]);
            assert_eq!(
                each,
                [p.get(c), None, p.get(a), p.get(d), p.get(a), p.get(b)],
                "get_each in the first {cut} bytes"
            );
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
        let [a, b, c, d, e, f] = ["a", "b", "c", "d", "e", "f"].map(|k| i.intern(k));
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
        // Key 0; an unknown type; a null with a payload; a varint past 64 bits;
        // a length past the end.
        for bad in [
            &[0, 0][..],
            &[1, 8 | 5 << 3, b'x'][..],
            &[1, 1 << 3],
            &[
                1,
                3 | 31 << 3,
                0xff,
                0xff,
                0xff,
                0xff,
                0xff,
                0xff,
                0xff,
                0xff,
                0xff,
                0x7f,
            ],
            &[1, 5 | 31 << 3, 0x80, 0x01, b'x'],
        ] {
            assert_eq!(Props::new(bad).count(), 0, "{bad:?}");
            assert_eq!(Props::new(bad).offsets().count(), 0, "{bad:?}");
            assert_eq!(Props::new(bad).matching(|_| true).count(), 0, "{bad:?}");
        }
    }

    /// Every value's width: in the head, in a varint, a float narrowed
    /// only when exact; keys past one varint byte.
    #[test]
    fn varint_len_counts_what_is_written() {
        for v in [0, 1, 127, 128, 16_383, 16_384, u64::from(u32::MAX), u64::MAX] {
            let mut buf = Vec::new();
            put_varint(&mut buf, v);
            assert_eq!(varint_len(v), buf.len(), "{v}");
            assert_eq!(take_varint(&mut &buf[..]), Some(v));
        }
    }

    #[test]
    fn values_of_every_width_round_trip() {
        let i = Interner::new();
        let keys: Vec<Sym> = (0..300).map(|n| i.intern(&format!("k{n}"))).collect();
        let long = "x".repeat(40_000);
        let values = [
            ValueRef::Int(0),
            ValueRef::Int(15),
            ValueRef::Int(-16),
            ValueRef::Int(16),
            ValueRef::Int(i64::MAX),
            ValueRef::Int(i64::MIN),
            ValueRef::Float(0.5),
            ValueRef::Float(0.1),
            ValueRef::Float(-0.0),
            ValueRef::Float(f64::INFINITY),
            ValueRef::Float(1e300),
            ValueRef::Str(""),
            ValueRef::Str("thirty characters, just so...."),
            ValueRef::Str("thirty-one characters, just so."),
            ValueRef::Str(&long),
            ValueRef::Json("[]"),
            ValueRef::Bool(false),
            ValueRef::Null,
        ];
        let mut buf = Vec::new();
        let mut w = PropWriter::new(&mut buf);
        let want: Vec<(Sym, ValueRef<'_>)> = keys.iter().zip(values.iter().cycle()).map(|(k, v)| (*k, *v)).collect();
        for (k, v) in &want {
            w.value(*k, *v);
        }
        let got: Vec<_> = Props::new(&buf).collect();
        assert_eq!(got.len(), want.len());
        for ((k, v), (gk, gv)) in want.iter().zip(&got) {
            assert_eq!(k, gk);
            match (v, gv) {
                (ValueRef::Float(a), ValueRef::Float(b)) => assert_eq!(a.to_bits(), b.to_bits(), "{k:?}"),
                _ => assert_eq!(v, gv, "{k:?}"),
            }
        }
        let mut nan = Vec::new();
        PropWriter::new(&mut nan).float(keys[0], f64::NAN);
        assert!(matches!(Props::new(&nan).get(keys[0]), Some(ValueRef::Float(f)) if f.is_nan()));
    }

    /// The fixed-width layout of format 1 reads as the same entries in the
    /// current one, and stops where format 1's reader stopped.
    #[test]
    fn format_1_blobs_are_rewritten_entry_for_entry() {
        let i = Interner::new();
        let [a, b, c, d, e, f] = ["a", "b", "c", "d", "e", "f"].map(|k| i.intern(k));
        let entry = |out: &mut Vec<u8>, k: Sym, ty: u8, payload: &[u8]| {
            out.extend_from_slice(&k.to_raw().to_le_bytes());
            out.push(ty);
            out.extend_from_slice(payload);
        };
        let text = |s: &str| [&(s.len() as u32).to_le_bytes()[..], s.as_bytes()].concat();
        let mut old = Vec::new();
        entry(&mut old, a, NULL, &[]);
        entry(&mut old, b, TRUE, &[]);
        entry(&mut old, c, INT, &(-42i64).to_le_bytes());
        entry(&mut old, d, FLOAT, &0.1f64.to_le_bytes());
        entry(&mut old, e, STR, &text("gp2"));
        entry(&mut old, f, JSON, &text("[1]"));
        let good = old.len();
        entry(&mut old, a, 9, &[]);
        entry(&mut old, b, TRUE, &[]);
        // The bytes today's writer writes for the same entries.
        let mut want = Vec::new();
        let mut w = PropWriter::new(&mut want);
        w.null(a);
        w.bool(b, true);
        w.int(c, -42);
        w.float(d, 0.1);
        w.str(e, "gp2");
        w.json(f, "[1]");
        assert_eq!(v1::props(&old), want);
        assert_eq!(v1::props(&old[..good]), v1::props(&old));
        let mut tags = Vec::new();
        for (k, v) in [(a, b), (c, d)] {
            tags.extend_from_slice(&(u64::from(k.to_raw()) | u64::from(v.to_raw()) << 32).to_le_bytes());
        }
        tags.extend_from_slice(&[0; 8]);
        let upgraded = v1::tags(&tags);
        assert_eq!(Tags::new(&upgraded).collect::<Vec<_>>(), vec![(a, b), (c, d)]);
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
        assert_eq!(Tags::new(&buf[..buf.len() - 1]).count(), 1);
        assert_eq!(Tags::new(&[0x80]).count(), 0);
    }
}

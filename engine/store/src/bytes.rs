//! The byte layer under every stored value: a [`Writer`] that appends
//! little-endian integers, floats (as their bits) and length-prefixed
//! bytes to a caller's buffer, and a [`Reader`] that reads them back.
//!
//! Lengths are prefixed as `u32` ([`Writer::bytes`], [`Writer::str`]),
//! `u64` ([`Writer::bytes64`]) or LEB128 ([`Writer::str_varint`]); which one
//! is part of each stored format, so each is written and read by name.
//!
//! The reader never panics and never allocates on the strength of a length
//! it has not checked: every read is a `Result` whose [`DecodeError`] names
//! what was being read, and a length longer than the bytes left is that
//! error before anything is copied.

use svc_graph::ids::Sym;

/// A stored value that cannot be read; the text names what was being read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("malformed stored value: {0}")]
pub struct DecodeError(pub &'static str);

/// Appends encoded values to a buffer owned by the caller.
pub struct Writer<'a> {
    out: &'a mut Vec<u8>,
}

impl<'a> Writer<'a> {
    /// A writer appending to `out`, after what it already holds.
    #[inline]
    pub fn new(out: &'a mut Vec<u8>) -> Writer<'a> {
        Writer { out }
    }

    /// Bytes as they are, with no length.
    #[inline]
    pub fn raw(&mut self, b: &[u8]) {
        self.out.extend_from_slice(b);
    }

    #[inline]
    pub fn u8(&mut self, v: u8) {
        self.out.push(v);
    }

    #[inline]
    pub fn u16(&mut self, v: u16) {
        self.raw(&v.to_le_bytes());
    }

    #[inline]
    pub fn u32(&mut self, v: u32) {
        self.raw(&v.to_le_bytes());
    }

    #[inline]
    pub fn u64(&mut self, v: u64) {
        self.raw(&v.to_le_bytes());
    }

    /// The float's bits, as [`Writer::u32`].
    #[inline]
    pub fn f32(&mut self, v: f32) {
        self.u32(v.to_bits());
    }

    /// The float's bits, as [`Writer::u64`].
    #[inline]
    pub fn f64(&mut self, v: f64) {
        self.u64(v.to_bits());
    }

    /// One byte, 1 or 0.
    #[inline]
    pub fn bool(&mut self, v: bool) {
        self.u8(u8::from(v));
    }

    /// A symbol's raw number, as [`Writer::u32`].
    #[inline]
    pub fn sym(&mut self, s: Sym) {
        self.u32(s.to_raw());
    }

    /// `b` behind its length as a `u32`. Stored values are far below 4 GiB.
    #[inline]
    pub fn bytes(&mut self, b: &[u8]) {
        debug_assert!(u32::try_from(b.len()).is_ok(), "{} bytes behind a u32 length", b.len());
        self.u32(b.len() as u32);
        self.raw(b);
    }

    /// `s` as [`Writer::bytes`].
    #[inline]
    pub fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }

    /// `b` behind its length as a `u64`.
    #[inline]
    pub fn bytes64(&mut self, b: &[u8]) {
        self.u64(b.len() as u64);
        self.raw(b);
    }

    /// `v` in LEB128: seven bits a byte, low bits first, the high bit set on
    /// every byte but the last.
    #[inline]
    pub fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.out.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.out.push(v as u8);
    }

    /// `s` behind its length in LEB128.
    #[inline]
    pub fn str_varint(&mut self, s: &str) {
        self.varint(s.len() as u64);
        self.raw(s.as_bytes());
    }

    /// Each byte as [`Writer::u8`].
    #[inline]
    pub fn u8s(&mut self, v: impl IntoIterator<Item = u8>) {
        self.out.extend(v);
    }

    /// Each value as [`Writer::u32`], with no count.
    #[inline]
    pub fn u32s(&mut self, v: impl IntoIterator<Item = u32>) {
        for x in v {
            self.u32(x);
        }
    }

    /// Each value as [`Writer::u64`], with no count.
    #[inline]
    pub fn u64s(&mut self, v: impl IntoIterator<Item = u64>) {
        for x in v {
            self.u64(x);
        }
    }
}

/// Reads encoded values from the front of a byte slice.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    #[inline]
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf }
    }

    /// How many bytes are left.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// `Ok` when every byte was read, else `what`.
    #[inline]
    pub fn end(&self, what: &'static str) -> Result<(), DecodeError> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(DecodeError(what))
        }
    }

    /// The next `n` bytes.
    #[inline]
    pub fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let (a, b) = self.buf.split_at_checked(n).ok_or(DecodeError(what))?;
        self.buf = b;
        Ok(a)
    }

    /// The next `N` bytes.
    #[inline]
    pub fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], DecodeError> {
        let (a, b) = self.buf.split_first_chunk::<N>().ok_or(DecodeError(what))?;
        self.buf = b;
        Ok(*a)
    }

    /// The next `n` groups of `N` bytes.
    #[inline]
    pub fn arrays<const N: usize>(&mut self, n: usize, what: &'static str) -> Result<&'a [[u8; N]], DecodeError> {
        let len = n.checked_mul(N).ok_or(DecodeError(what))?;
        let (chunks, _) = self.take(len, what)?.as_chunks::<N>();
        Ok(chunks)
    }

    #[inline]
    pub fn u8(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        let (a, b) = self.buf.split_first().ok_or(DecodeError(what))?;
        self.buf = b;
        Ok(*a)
    }

    #[inline]
    pub fn u16(&mut self, what: &'static str) -> Result<u16, DecodeError> {
        self.array(what).map(u16::from_le_bytes)
    }

    #[inline]
    pub fn u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        self.array(what).map(u32::from_le_bytes)
    }

    #[inline]
    pub fn u64(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        self.array(what).map(u64::from_le_bytes)
    }

    #[inline]
    pub fn f32(&mut self, what: &'static str) -> Result<f32, DecodeError> {
        self.u32(what).map(f32::from_bits)
    }

    #[inline]
    pub fn f64(&mut self, what: &'static str) -> Result<f64, DecodeError> {
        self.u64(what).map(f64::from_bits)
    }

    /// One byte; any but 0 is true.
    #[inline]
    pub fn bool(&mut self, what: &'static str) -> Result<bool, DecodeError> {
        self.u8(what).map(|v| v != 0)
    }

    /// A symbol; raw 0 is `what`.
    #[inline]
    pub fn sym(&mut self, what: &'static str) -> Result<Sym, DecodeError> {
        Sym::from_raw(self.u32(what)?).ok_or(DecodeError(what))
    }

    /// Bytes behind a `u32` length.
    #[inline]
    pub fn bytes(&mut self, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let n = self.u32(what)?;
        self.take(usize::try_from(n).map_err(|_| DecodeError(what))?, what)
    }

    /// UTF-8 behind a `u32` length.
    #[inline]
    pub fn str(&mut self, what: &'static str) -> Result<&'a str, DecodeError> {
        std::str::from_utf8(self.bytes(what)?).map_err(|_| DecodeError(what))
    }

    /// [`Reader::str`], owned.
    #[inline]
    pub fn string(&mut self, what: &'static str) -> Result<String, DecodeError> {
        self.str(what).map(str::to_owned)
    }

    /// Bytes behind a `u64` length.
    #[inline]
    pub fn bytes64(&mut self, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let n = self.u64(what)?;
        self.take(usize::try_from(n).map_err(|_| DecodeError(what))?, what)
    }

    /// A LEB128 number of at most ten bytes (bits past the 64th are dropped).
    #[inline]
    pub fn varint(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8(what)?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(DecodeError(what))
    }

    /// UTF-8 behind a LEB128 length.
    #[inline]
    pub fn str_varint(&mut self, what: &'static str) -> Result<&'a str, DecodeError> {
        let n = usize::try_from(self.varint(what)?).map_err(|_| DecodeError(what))?;
        std::str::from_utf8(self.take(n, what)?).map_err(|_| DecodeError(what))
    }

    /// A `u32` count of items that each take at least `min_bytes`: more than
    /// the bytes left could hold is `what`.
    #[inline]
    pub fn count(&mut self, min_bytes: usize, what: &'static str) -> Result<usize, DecodeError> {
        let n = usize::try_from(self.u32(what)?).map_err(|_| DecodeError(what))?;
        if n.saturating_mul(min_bytes) > self.buf.len() {
            return Err(DecodeError(what));
        }
        Ok(n)
    }

    /// The next `n` bytes, as [`Reader::take`].
    #[inline]
    pub fn u8s(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        self.take(n, what)
    }

    /// The next `n` values written by [`Writer::u32s`].
    #[inline]
    pub fn u32s(
        &mut self,
        n: usize,
        what: &'static str,
    ) -> Result<impl ExactSizeIterator<Item = u32> + 'a, DecodeError> {
        Ok(self.arrays::<4>(n, what)?.iter().map(|c| u32::from_le_bytes(*c)))
    }

    /// The next `n` values written by [`Writer::u64s`].
    #[inline]
    pub fn u64s(
        &mut self,
        n: usize,
        what: &'static str,
    ) -> Result<impl ExactSizeIterator<Item = u64> + 'a, DecodeError> {
        Ok(self.arrays::<8>(n, what)?.iter().map(|c| u64::from_le_bytes(*c)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// One write, and what reading it back must give.
    #[derive(Clone, Debug)]
    enum Op {
        Raw(Vec<u8>),
        U8(u8),
        U16(u16),
        U32(u32),
        U64(u64),
        F32(u32),
        F64(u64),
        Bool(bool),
        Sym(u32),
        Bytes(Vec<u8>),
        Str(String),
        Bytes64(Vec<u8>),
        Varint(u64),
        StrVarint(String),
        U8s(Vec<u8>),
        U32s(Vec<u32>),
        U64s(Vec<u64>),
    }

    fn op() -> impl Strategy<Value = Op> {
        let bytes = || proptest::collection::vec(any::<u8>(), 0..40);
        prop_oneof![
            bytes().prop_map(Op::Raw),
            any::<u8>().prop_map(Op::U8),
            any::<u16>().prop_map(Op::U16),
            any::<u32>().prop_map(Op::U32),
            any::<u64>().prop_map(Op::U64),
            any::<u32>().prop_map(Op::F32),
            any::<u64>().prop_map(Op::F64),
            any::<bool>().prop_map(Op::Bool),
            (1..=u32::MAX).prop_map(Op::Sym),
            bytes().prop_map(Op::Bytes),
            ".{0,20}".prop_map(Op::Str),
            bytes().prop_map(Op::Bytes64),
            any::<u64>().prop_map(Op::Varint),
            ".{0,20}".prop_map(Op::StrVarint),
            bytes().prop_map(Op::U8s),
            proptest::collection::vec(any::<u32>(), 0..10).prop_map(Op::U32s),
            proptest::collection::vec(any::<u64>(), 0..10).prop_map(Op::U64s),
        ]
    }

    fn write(w: &mut Writer<'_>, op: &Op) {
        match op {
            Op::Raw(b) => w.raw(b),
            Op::U8(v) => w.u8(*v),
            Op::U16(v) => w.u16(*v),
            Op::U32(v) => w.u32(*v),
            Op::U64(v) => w.u64(*v),
            Op::F32(bits) => w.f32(f32::from_bits(*bits)),
            Op::F64(bits) => w.f64(f64::from_bits(*bits)),
            Op::Bool(v) => w.bool(*v),
            Op::Sym(raw) => w.sym(Sym::from_raw(*raw).unwrap()),
            Op::Bytes(b) => w.bytes(b),
            Op::Str(s) => w.str(s),
            Op::Bytes64(b) => w.bytes64(b),
            Op::Varint(v) => w.varint(*v),
            Op::StrVarint(s) => w.str_varint(s),
            Op::U8s(v) => w.u8s(v.iter().copied()),
            Op::U32s(v) => w.u32s(v.iter().copied()),
            Op::U64s(v) => w.u64s(v.iter().copied()),
        }
    }

    /// Reads back what `op` wrote, as the op it would have been written by
    /// (floats by their bits, so NaNs compare).
    fn read(r: &mut Reader<'_>, op: &Op) -> Result<Op, DecodeError> {
        Ok(match op {
            Op::Raw(b) => Op::Raw(r.take(b.len(), "raw")?.to_vec()),
            Op::U8(_) => Op::U8(r.u8("u8")?),
            Op::U16(_) => Op::U16(r.u16("u16")?),
            Op::U32(_) => Op::U32(r.u32("u32")?),
            Op::U64(_) => Op::U64(r.u64("u64")?),
            Op::F32(_) => Op::F32(r.f32("f32")?.to_bits()),
            Op::F64(_) => Op::F64(r.f64("f64")?.to_bits()),
            Op::Bool(_) => Op::Bool(r.bool("bool")?),
            Op::Sym(_) => Op::Sym(r.sym("sym")?.to_raw()),
            Op::Bytes(_) => Op::Bytes(r.bytes("bytes")?.to_vec()),
            Op::Str(_) => Op::Str(r.string("str")?),
            Op::Bytes64(_) => Op::Bytes64(r.bytes64("bytes64")?.to_vec()),
            Op::Varint(_) => Op::Varint(r.varint("varint")?),
            Op::StrVarint(_) => Op::StrVarint(r.str_varint("str varint")?.to_owned()),
            Op::U8s(v) => Op::U8s(r.u8s(v.len(), "u8s")?.to_vec()),
            Op::U32s(v) => Op::U32s(r.u32s(v.len(), "u32s")?.collect()),
            Op::U64s(v) => Op::U64s(r.u64s(v.len(), "u64s")?.collect()),
        })
    }

    fn same(a: &Op, b: &Op) -> bool {
        format!("{a:?}") == format!("{b:?}")
    }

    proptest! {
        #[test]
        fn any_sequence_of_writes_reads_back(ops in proptest::collection::vec(op(), 0..30), prefix in proptest::collection::vec(any::<u8>(), 0..4)) {
            let mut buf = prefix.clone();
            let mut w = Writer::new(&mut buf);
            for op in &ops {
                write(&mut w, op);
            }
            prop_assert_eq!(&buf[..prefix.len()], &prefix[..]);
            let mut r = Reader::new(&buf[prefix.len()..]);
            for op in &ops {
                let back = read(&mut r, op);
                prop_assert!(back.as_ref().is_ok_and(|b| same(b, op)), "{:?} read back as {:?}", op, back);
            }
            prop_assert_eq!(r.end("end"), Ok(()));
        }

        #[test]
        fn a_cut_anywhere_is_an_error_not_a_different_value(ops in proptest::collection::vec(op(), 1..20), cut in any::<prop::sample::Index>()) {
            let mut buf = Vec::new();
            let mut w = Writer::new(&mut buf);
            for op in &ops {
                write(&mut w, op);
            }
            prop_assume!(!buf.is_empty());
            let cut = cut.index(buf.len());
            let mut r = Reader::new(&buf[..cut]);
            let all = ops.iter().try_for_each(|op| read(&mut r, op).map(drop));
            prop_assert!(all.is_err(), "{} of {} bytes read as the whole", cut, buf.len());
        }

        #[test]
        fn arbitrary_bytes_never_panic_the_reader(buf in proptest::collection::vec(any::<u8>(), 0..200), reads in proptest::collection::vec((0u8..20, any::<usize>()), 0..40)) {
            let mut r = Reader::new(&buf);
            for (kind, n) in reads {
                let before = r.remaining();
                let n = if kind % 2 == 0 { n % 64 } else { n };
                let _ = match kind {
                    0 | 1 => r.take(n, "take").map(|b| b.len()),
                    2 => r.u8("u8").map(usize::from),
                    3 => r.u16("u16").map(usize::from),
                    4 => r.u32("u32").map(|_| 4),
                    5 => r.u64("u64").map(|_| 8),
                    6 => r.sym("sym").map(|_| 4),
                    7 => r.bytes("bytes").map(<[u8]>::len),
                    8 => r.str("str").map(str::len),
                    9 => r.bytes64("bytes64").map(<[u8]>::len),
                    10 => r.varint("varint").map(|_| 1),
                    11 => r.str_varint("str varint").map(str::len),
                    12 | 13 => r.count(n % 64, "count"),
                    14 | 15 => r.u32s(n, "u32s").map(Iterator::count),
                    16 | 17 => r.u64s(n, "u64s").map(Iterator::count),
                    _ => r.arrays::<3>(n, "arrays").map(<[_]>::len),
                };
                prop_assert!(r.remaining() <= before);
            }
        }
    }

    #[test]
    fn a_length_longer_than_what_is_left_is_an_error() {
        let mut buf = Vec::new();
        let mut w = Writer::new(&mut buf);
        w.u32(u32::MAX);
        w.raw(b"abc");
        assert_eq!(Reader::new(&buf).bytes("value"), Err(DecodeError("value")));
        let mut buf = Vec::new();
        Writer::new(&mut buf).u64(u64::MAX);
        assert_eq!(Reader::new(&buf).bytes64("section"), Err(DecodeError("section")));
        let mut buf = Vec::new();
        Writer::new(&mut buf).varint(u64::MAX);
        assert_eq!(Reader::new(&buf).str_varint("payload"), Err(DecodeError("payload")));
        assert_eq!(Reader::new(&[0x80; 11]).varint("length"), Err(DecodeError("length")));
        assert_eq!(Reader::new(&[1, 0, 0, 0]).count(1, "count"), Err(DecodeError("count")));
        assert_eq!(
            Reader::new(&[0; 8]).u64s(usize::MAX, "column").map(drop).err(),
            Some(DecodeError("column"))
        );
    }

    #[test]
    fn invalid_utf8_and_a_zero_symbol_are_errors() {
        let mut buf = Vec::new();
        let mut w = Writer::new(&mut buf);
        w.bytes(&[0xff, 0xfe]);
        w.u32(0);
        let mut r = Reader::new(&buf);
        assert_eq!(r.str("name"), Err(DecodeError("name")));
        let mut r = Reader::new(&buf[6..]);
        assert_eq!(r.sym("type"), Err(DecodeError("type")));
        assert_eq!(DecodeError("type").to_string(), "malformed stored value: type");
    }

    #[test]
    fn the_layout_is_little_endian_with_the_length_first() {
        let mut buf = vec![9];
        let mut w = Writer::new(&mut buf);
        w.u16(0x0102);
        w.u32(0x0304_0506);
        w.f32(1.0);
        w.bool(true);
        w.str("hé");
        w.bytes64(b"x");
        w.varint(300);
        w.str_varint("ab");
        assert_eq!(
            buf,
            [
                &[9u8, 0x02, 0x01, 0x06, 0x05, 0x04, 0x03, 0, 0, 0x80, 0x3f, 1][..],
                &[3, 0, 0, 0, b'h', 0xc3, 0xa9],
                &[1, 0, 0, 0, 0, 0, 0, 0, b'x'],
                &[0xac, 0x02, 2, b'a', b'b'],
            ]
            .concat()
        );
    }
}

//! How each kind of schema field ([`svc_graph::graph::schema`]) is stored:
//! as one value of a stored version (the codec), and as a whole shard
//! column of a snapshot section. The codec and the snapshot are generated
//! from the schema over these; a new kind is stored once here.

use std::sync::Arc;

use svc_graph::graph::schema::{Bytes, F32, Flag, Key, Kind, MaybeSymbol, Reach, Rel, Stage, Symbol, Text, U64};
use svc_graph::graph::{At, Backing, BitSet, Col, Phase, Plain, Reachability};
use svc_graph::ids::Sym;
use svc_graph::relation::Relation;

use crate::bytes::{DecodeError, Reader, Writer};

/// A schema kind's stored forms. Little-endian throughout (docs/formats.md).
pub trait Stored: Kind {
    /// Bytes [`Stored::write`] appends for `v`.
    fn len(v: Self::Ref<'_>) -> usize;
    fn write(w: &mut Writer<'_>, v: Self::Ref<'_>);
    /// A value [`Stored::write`] wrote; `what` names it in the error.
    fn read(r: &mut Reader<'_>, what: &'static str) -> Result<Self::Owned, DecodeError>;
    /// The first `rows` rows of a column as a snapshot holds them, with
    /// no count: the values' bytes as they are in memory (little-endian),
    /// then zeros to a multiple of 8 bytes.
    fn write_column(out: &mut Vec<u8>, c: &Self::Column, rows: usize);
    /// A column of `rows` rows [`Stored::write_column`] wrote, read where
    /// it lies in `m` (not copied), its values checked, its spans (if
    /// any) checked against an arena of `arena` bytes.
    fn map_column(m: &mut Mapped, rows: usize, arena: usize, what: &'static str) -> Result<Self::Column, DecodeError>;
}

/// Zeros up to the next multiple of 8 bytes of `out`.
pub fn pad8(out: &mut Vec<u8>) {
    out.resize(out.len().next_multiple_of(8), 0);
}

/// The first `rows` values of `c`, as bytes, padded ([`Stored::write_column`]).
pub fn write_plain<T: Plain>(out: &mut Vec<u8>, c: &Col<T>, rows: usize) {
    let rows = rows.min(c.len());
    out.extend_from_slice(&c.as_bytes()[..rows * std::mem::size_of::<T>()]);
    pad8(out);
}

/// A stretch of a shared buffer (a mapped snapshot) read from the front,
/// each column where it lies, at a multiple of 8 bytes from the buffer's start.
pub struct Mapped {
    backing: Arc<dyn Backing>,
    pos: usize,
    end: usize,
}

impl Mapped {
    /// Bytes `pos .. end` of `backing`.
    pub fn new(backing: Arc<dyn Backing>, pos: usize, end: usize) -> Mapped {
        Mapped { backing, pos, end }
    }

    /// A copy of `bytes` in 8-byte words, aligned as a mapped section is:
    /// a section held in memory (tests, fuzzing) read as a mapped one.
    pub fn copied(bytes: &[u8]) -> Mapped {
        let mut words = vec![0u64; bytes.len().div_ceil(8)];
        for (w, c) in words.iter_mut().zip(bytes.chunks(8)) {
            let mut x = [0u8; 8];
            x[..c.len()].copy_from_slice(c);
            *w = u64::from_le_bytes(x);
        }
        Mapped::new(Arc::new(Words(words, bytes.len())), 0, bytes.len())
    }

    /// The next `n` bytes, then past the padding after them.
    pub fn take(&mut self, n: usize, what: &'static str) -> Result<&[u8], DecodeError> {
        let start = self.pos;
        let stop = start
            .checked_add(n)
            .filter(|&e| e <= self.end)
            .ok_or(DecodeError(what))?;
        self.pos = stop.next_multiple_of(8).min(self.end);
        self.backing.bytes().get(start..stop).ok_or(DecodeError(what))
    }

    /// The next little-endian `u64`.
    pub fn u64(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        let b = self.take(8, what)?;
        let b: [u8; 8] = b.try_into().map_err(|_| DecodeError(what))?;
        Ok(u64::from_le_bytes(b))
    }

    /// A column of `rows` values where it lies, then past the padding after it.
    pub fn col<T: Plain>(&mut self, rows: usize, what: &'static str) -> Result<Col<T>, DecodeError> {
        let len = rows.checked_mul(std::mem::size_of::<T>()).ok_or(DecodeError(what))?;
        let at = self.pos;
        self.take(len, what)?;
        Col::shared(self.backing.clone(), at, rows).map_err(|_| DecodeError(what))
    }

    /// `Ok` when every byte was read, else `what`.
    pub fn end(&self, what: &'static str) -> Result<(), DecodeError> {
        if self.pos == self.end {
            Ok(())
        } else {
            Err(DecodeError(what))
        }
    }
}

/// Blobs' places, each checked to be empty or to start inside an arena
/// of `arena` bytes (a length running past its end reads as empty).
fn map_blobs(m: &mut Mapped, rows: usize, arena: usize, what: &'static str) -> Result<Col<At>, DecodeError> {
    let c: Col<At> = m.col(rows, what)?;
    let inside = c
        .iter()
        .fold(true, |ok, a| ok & (*a == At::EMPTY || (a.offset() as usize) < arena));
    if inside { Ok(c) } else { Err(DecodeError(what)) }
}
impl Stored for Key {
    fn len(_: [Sym; 5]) -> usize {
        5 * 4
    }
    fn write(w: &mut Writer<'_>, v: [Sym; 5]) {
        for s in v {
            w.sym(s);
        }
    }
    fn read(r: &mut Reader<'_>, _: &'static str) -> Result<[Sym; 5], DecodeError> {
        Ok([
            r.sym("provider")?,
            r.sym("region")?,
            r.sym("service")?,
            r.sym("kind")?,
            r.sym("account")?,
        ])
    }
    fn write_column(out: &mut Vec<u8>, c: &Self::Column, rows: usize) {
        write_plain(out, c, rows);
    }
    fn map_column(m: &mut Mapped, rows: usize, _: usize, what: &'static str) -> Result<Self::Column, DecodeError> {
        m.col(rows, what)
    }
}

impl Stored for Symbol {
    fn len(_: Sym) -> usize {
        4
    }
    fn write(w: &mut Writer<'_>, v: Sym) {
        w.sym(v);
    }
    fn read(r: &mut Reader<'_>, what: &'static str) -> Result<Sym, DecodeError> {
        r.sym(what)
    }
    fn write_column(out: &mut Vec<u8>, c: &Self::Column, rows: usize) {
        write_plain(out, c, rows);
    }
    fn map_column(m: &mut Mapped, rows: usize, _: usize, what: &'static str) -> Result<Self::Column, DecodeError> {
        m.col(rows, what)
    }
}

/// Raw 0 for none.
impl Stored for MaybeSymbol {
    fn len(_: Option<Sym>) -> usize {
        4
    }
    fn write(w: &mut Writer<'_>, v: Option<Sym>) {
        w.u32(v.map_or(0, Sym::to_raw));
    }
    fn read(r: &mut Reader<'_>, what: &'static str) -> Result<Option<Sym>, DecodeError> {
        Ok(Sym::from_raw(r.u32(what)?))
    }
    fn write_column(out: &mut Vec<u8>, c: &Self::Column, rows: usize) {
        write_plain(out, c, rows);
    }
    fn map_column(m: &mut Mapped, rows: usize, _: usize, what: &'static str) -> Result<Self::Column, DecodeError> {
        m.col(rows, what)
    }
}

/// The float's bits.
impl Stored for F32 {
    fn len(_: f32) -> usize {
        4
    }
    fn write(w: &mut Writer<'_>, v: f32) {
        w.f32(v);
    }
    fn read(r: &mut Reader<'_>, what: &'static str) -> Result<f32, DecodeError> {
        r.f32(what)
    }
    fn write_column(out: &mut Vec<u8>, c: &Self::Column, rows: usize) {
        write_plain(out, c, rows);
    }
    fn map_column(m: &mut Mapped, rows: usize, _: usize, what: &'static str) -> Result<Self::Column, DecodeError> {
        m.col(rows, what)
    }
}

impl Stored for U64 {
    fn len(_: u64) -> usize {
        8
    }
    fn write(w: &mut Writer<'_>, v: u64) {
        w.u64(v);
    }
    fn read(r: &mut Reader<'_>, what: &'static str) -> Result<u64, DecodeError> {
        r.u64(what)
    }
    fn write_column(out: &mut Vec<u8>, c: &Self::Column, rows: usize) {
        write_plain(out, c, rows);
    }
    fn map_column(m: &mut Mapped, rows: usize, _: usize, what: &'static str) -> Result<Self::Column, DecodeError> {
        m.col(rows, what)
    }
}

/// One byte, 1 or 0.
impl Stored for Flag {
    fn len(_: bool) -> usize {
        1
    }
    fn write(w: &mut Writer<'_>, v: bool) {
        w.bool(v);
    }
    fn read(r: &mut Reader<'_>, what: &'static str) -> Result<bool, DecodeError> {
        r.bool(what)
    }
    /// The bitset's words, `rows / 64` rounded up, no bit set past `rows`.
    fn write_column(out: &mut Vec<u8>, c: &BitSet, rows: usize) {
        let words = c.words();
        for i in 0..rows.div_ceil(64) {
            let mut w = words.get(i).copied().unwrap_or(0);
            let bits = rows - i * 64;
            if bits < 64 {
                w &= (1u64 << bits) - 1;
            }
            out.extend_from_slice(&w.to_le_bytes());
        }
    }
    fn map_column(m: &mut Mapped, rows: usize, _: usize, what: &'static str) -> Result<BitSet, DecodeError> {
        Ok(BitSet::from_words(m.col(rows.div_ceil(64), what)?))
    }
}

/// One byte; an unknown value reads as unknown.
impl Stored for Reach {
    fn len(_: Reachability) -> usize {
        1
    }
    fn write(w: &mut Writer<'_>, v: Reachability) {
        w.u8(v as u8);
    }
    fn read(r: &mut Reader<'_>, what: &'static str) -> Result<Reachability, DecodeError> {
        Ok(Reachability::from_u8(r.u8(what)?))
    }
    fn write_column(out: &mut Vec<u8>, c: &Self::Column, rows: usize) {
        write_plain(out, c, rows);
    }
    fn map_column(m: &mut Mapped, rows: usize, _: usize, what: &'static str) -> Result<Self::Column, DecodeError> {
        m.col(rows, what)
    }
}

/// One byte; an unknown value reads as no stage.
impl Stored for Stage {
    fn len(_: Phase) -> usize {
        1
    }
    fn write(w: &mut Writer<'_>, v: Phase) {
        w.u8(v as u8);
    }
    fn read(r: &mut Reader<'_>, what: &'static str) -> Result<Phase, DecodeError> {
        Ok(Phase::from_u8(r.u8(what)?))
    }
    fn write_column(out: &mut Vec<u8>, c: &Self::Column, rows: usize) {
        write_plain(out, c, rows);
    }
    fn map_column(m: &mut Mapped, rows: usize, _: usize, what: &'static str) -> Result<Self::Column, DecodeError> {
        m.col(rows, what)
    }
}

/// One byte; an unknown relation is an error.
impl Stored for Rel {
    fn len(_: Relation) -> usize {
        1
    }
    fn write(w: &mut Writer<'_>, v: Relation) {
        w.u8(v as u8);
    }
    fn read(r: &mut Reader<'_>, what: &'static str) -> Result<Relation, DecodeError> {
        Relation::from_u8(r.u8(what)?).ok_or(DecodeError(what))
    }
    fn write_column(out: &mut Vec<u8>, c: &Self::Column, rows: usize) {
        write_plain(out, c, rows);
    }
    fn map_column(m: &mut Mapped, rows: usize, _: usize, what: &'static str) -> Result<Self::Column, DecodeError> {
        m.col(rows, what)
    }
}

/// Behind a `u32` length; a blob of the arena in a column.
impl Stored for Text {
    fn len(v: &[u8]) -> usize {
        4 + v.len()
    }
    fn write(w: &mut Writer<'_>, v: &[u8]) {
        w.bytes(v);
    }
    fn read(r: &mut Reader<'_>, what: &'static str) -> Result<String, DecodeError> {
        r.string(what)
    }
    fn write_column(out: &mut Vec<u8>, c: &Col<At>, rows: usize) {
        write_plain(out, c, rows);
    }
    fn map_column(m: &mut Mapped, rows: usize, arena: usize, what: &'static str) -> Result<Col<At>, DecodeError> {
        map_blobs(m, rows, arena, what)
    }
}

/// As [`Text`], any bytes.
impl Stored for Bytes {
    fn len(v: &[u8]) -> usize {
        4 + v.len()
    }
    fn write(w: &mut Writer<'_>, v: &[u8]) {
        w.bytes(v);
    }
    fn read(r: &mut Reader<'_>, what: &'static str) -> Result<Vec<u8>, DecodeError> {
        Ok(r.bytes(what)?.to_vec())
    }
    fn write_column(out: &mut Vec<u8>, c: &Col<At>, rows: usize) {
        write_plain(out, c, rows);
    }
    fn map_column(m: &mut Mapped, rows: usize, arena: usize, what: &'static str) -> Result<Col<At>, DecodeError> {
        map_blobs(m, rows, arena, what)
    }
}

/// Bytes held in 8-byte words (the first `.1` of them count).
struct Words(Vec<u64>, usize);

impl Backing for Words {
    fn bytes(&self) -> &[u8] {
        let s = &self.0[..];
        // SAFETY: u64s have no padding, any byte pattern is a valid u8, and
        // the slice covers exactly the words' memory; the length is within it.
        #[allow(unsafe_code)]
        let all = unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), std::mem::size_of_val(s)) };
        &all[..self.1]
    }
}

//! How each kind of schema field ([`svc_graph::graph::schema`]) is stored:
//! as one value of a stored version (the codec), and as a whole shard
//! column of a snapshot section. The codec and the snapshot are generated
//! from the schema over these; a new kind is stored once here.

use svc_graph::graph::schema::{Bytes, F32, Flag, Key, Kind, MaybeSymbol, Reach, Rel, Stage, Symbol, Text, U64};
use svc_graph::graph::{BitSet, Phase, Reachability, Span};
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
    /// The first `rows` rows of a column, with no count.
    fn write_column(w: &mut Writer<'_>, c: &Self::Column, rows: usize);
    /// A column of `rows` rows [`Stored::write_column`] wrote, its spans
    /// (if any) checked against an arena of `arena` bytes.
    fn read_column(
        r: &mut Reader<'_>,
        rows: usize,
        arena: usize,
        what: &'static str,
    ) -> Result<Self::Column, DecodeError>;
}

/// `n` symbols; raw 0, which no symbol has, is `what`.
fn syms(r: &mut Reader<'_>, n: usize, what: &'static str) -> Result<Vec<Sym>, DecodeError> {
    r.u32s(n, what)?
        .map(|v| Sym::from_raw(v).ok_or(DecodeError(what)))
        .collect()
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
    fn write_column(w: &mut Writer<'_>, c: &Vec<[Sym; 5]>, rows: usize) {
        w.u32s(c.iter().take(rows).flat_map(|k| k.map(Sym::to_raw)));
    }
    fn read_column(
        r: &mut Reader<'_>,
        rows: usize,
        _: usize,
        what: &'static str,
    ) -> Result<Vec<[Sym; 5]>, DecodeError> {
        let flat = syms(r, 5 * rows, what)?;
        Ok(flat.chunks_exact(5).map(|k| [k[0], k[1], k[2], k[3], k[4]]).collect())
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
    fn write_column(w: &mut Writer<'_>, c: &Vec<Sym>, rows: usize) {
        w.u32s(c.iter().take(rows).map(|x| x.to_raw()));
    }
    fn read_column(r: &mut Reader<'_>, rows: usize, _: usize, what: &'static str) -> Result<Vec<Sym>, DecodeError> {
        syms(r, rows, what)
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
    fn write_column(w: &mut Writer<'_>, c: &Vec<Option<Sym>>, rows: usize) {
        w.u32s(c.iter().take(rows).map(|x| x.map_or(0, Sym::to_raw)));
    }
    fn read_column(
        r: &mut Reader<'_>,
        rows: usize,
        _: usize,
        what: &'static str,
    ) -> Result<Vec<Option<Sym>>, DecodeError> {
        Ok(r.u32s(rows, what)?.map(Sym::from_raw).collect())
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
    fn write_column(w: &mut Writer<'_>, c: &Vec<f32>, rows: usize) {
        w.u32s(c.iter().take(rows).map(|x| x.to_bits()));
    }
    fn read_column(r: &mut Reader<'_>, rows: usize, _: usize, what: &'static str) -> Result<Vec<f32>, DecodeError> {
        Ok(r.u32s(rows, what)?.map(f32::from_bits).collect())
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
    fn write_column(w: &mut Writer<'_>, c: &Vec<u64>, rows: usize) {
        w.u64s(c.iter().take(rows).copied());
    }
    fn read_column(r: &mut Reader<'_>, rows: usize, _: usize, what: &'static str) -> Result<Vec<u64>, DecodeError> {
        Ok(r.u64s(rows, what)?.collect())
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
    fn write_column(w: &mut Writer<'_>, c: &BitSet, rows: usize) {
        w.u8s((0..rows).map(|i| u8::from(c.get(i))));
    }
    fn read_column(r: &mut Reader<'_>, rows: usize, _: usize, what: &'static str) -> Result<BitSet, DecodeError> {
        let bytes = r.u8s(rows, what)?;
        let mut c = BitSet::with_len(rows);
        for (i, b) in bytes.iter().enumerate() {
            c.set(i, *b != 0);
        }
        Ok(c)
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
    fn write_column(w: &mut Writer<'_>, c: &Vec<Reachability>, rows: usize) {
        w.u8s(c.iter().take(rows).map(|x| *x as u8));
    }
    fn read_column(
        r: &mut Reader<'_>,
        rows: usize,
        _: usize,
        what: &'static str,
    ) -> Result<Vec<Reachability>, DecodeError> {
        Ok(r.u8s(rows, what)?.iter().map(|v| Reachability::from_u8(*v)).collect())
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
    fn write_column(w: &mut Writer<'_>, c: &Vec<Phase>, rows: usize) {
        w.u8s(c.iter().take(rows).map(|x| *x as u8));
    }
    fn read_column(r: &mut Reader<'_>, rows: usize, _: usize, what: &'static str) -> Result<Vec<Phase>, DecodeError> {
        Ok(r.u8s(rows, what)?.iter().map(|v| Phase::from_u8(*v)).collect())
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
    fn write_column(w: &mut Writer<'_>, c: &Vec<Relation>, rows: usize) {
        w.u8s(c.iter().take(rows).map(|x| *x as u8));
    }
    fn read_column(
        r: &mut Reader<'_>,
        rows: usize,
        _: usize,
        what: &'static str,
    ) -> Result<Vec<Relation>, DecodeError> {
        r.u8s(rows, what)?
            .iter()
            .map(|v| Relation::from_u8(*v).ok_or(DecodeError(what)))
            .collect()
    }
}

/// Spans (offset and length, `u32` each) of a snapshot's arena, each
/// checked to lie inside it.
fn write_spans(w: &mut Writer<'_>, c: &[Span], rows: usize) {
    w.u32s(c.iter().take(rows).flat_map(|x| [x.off, x.len]));
}

fn read_spans(r: &mut Reader<'_>, rows: usize, arena: usize, what: &'static str) -> Result<Vec<Span>, DecodeError> {
    r.arrays::<8>(rows, what)?
        .iter()
        .map(|&[a, b, c, d, e, f, g, h]| {
            let s = Span {
                off: u32::from_le_bytes([a, b, c, d]),
                len: u32::from_le_bytes([e, f, g, h]),
            };
            if (s.off as usize + s.len as usize) <= arena {
                Ok(s)
            } else {
                Err(DecodeError(what))
            }
        })
        .collect()
}

/// Behind a `u32` length; a span of the arena in a column.
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
    fn write_column(w: &mut Writer<'_>, c: &Vec<Span>, rows: usize) {
        write_spans(w, c, rows);
    }
    fn read_column(
        r: &mut Reader<'_>,
        rows: usize,
        arena: usize,
        what: &'static str,
    ) -> Result<Vec<Span>, DecodeError> {
        read_spans(r, rows, arena, what)
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
    fn write_column(w: &mut Writer<'_>, c: &Vec<Span>, rows: usize) {
        write_spans(w, c, rows);
    }
    fn read_column(
        r: &mut Reader<'_>,
        rows: usize,
        arena: usize,
        what: &'static str,
    ) -> Result<Vec<Span>, DecodeError> {
        read_spans(r, rows, arena, what)
    }
}

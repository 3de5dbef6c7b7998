//! The byte-level pieces shared by batches and shards: spans of a byte
//! buffer, blobs of a shard arena, the content and key hash finaliser,
//! and cache prefetch hints with the two steps ([`Prefetch`]) a walk over
//! rows asks for them in.

use std::hash::Hasher;

use rustc_hash::FxHasher;

use super::col::{Col, Plain};
use crate::ids::Sym;

/// A byte range in a batch buffer or a shard arena.
#[derive(Copy, Clone, Default, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Span {
    pub off: u32,
    pub len: u32,
}

impl Span {
    pub fn get(self, buf: &[u8]) -> &[u8] {
        let start = self.off as usize;
        buf.get(start..start + self.len as usize).unwrap_or(&[])
    }
    pub fn get_str(self, buf: &[u8]) -> &str {
        std::str::from_utf8(self.get(buf)).unwrap_or("")
    }
}

/// Appends `bytes` to `buf` and returns where they are.
pub fn push_bytes(buf: &mut Vec<u8>, bytes: &[u8]) -> Span {
    let off = buf.len() as u32;
    buf.extend_from_slice(bytes);
    Span {
        off,
        len: bytes.len() as u32,
    }
}

/// Where a blob lies in a shard arena, in four bytes: the offset of its
/// length (a LEB128 varint), its bytes right after. An empty blob is
/// [`At::EMPTY`] and takes no arena bytes. Reading is bounds-checked: an
/// offset or length past the arena reads as empty.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct At(u32);

impl Default for At {
    fn default() -> At {
        At::EMPTY
    }
}

impl At {
    pub const EMPTY: At = At(u32::MAX);

    /// The blob's length and where its bytes start.
    #[inline]
    fn locate(self, arena: &[u8]) -> Option<(usize, usize)> {
        if self == At::EMPTY {
            return None;
        }
        let mut b = arena.get(self.0 as usize..)?;
        let before = b.len();
        let len = usize::try_from(crate::props::take_varint(&mut b)?).ok()?;
        Some((self.0 as usize + before - b.len(), len))
    }
    #[inline]
    pub fn get(self, arena: &[u8]) -> &[u8] {
        self.locate(arena)
            .and_then(|(start, len)| arena.get(start..start.checked_add(len)?))
            .unwrap_or(&[])
    }
    pub fn get_str(self, arena: &[u8]) -> &str {
        std::str::from_utf8(self.get(arena)).unwrap_or("")
    }
    pub fn len(self, arena: &[u8]) -> usize {
        self.get(arena).len()
    }
    /// The blob whose bytes `span` covers, in a buffer [`push_blob`]
    /// wrote: its length lies right before them.
    pub fn before(span: Span) -> At {
        if span.len == 0 {
            return At::EMPTY;
        }
        At(span
            .off
            .saturating_sub(crate::props::varint_len(u64::from(span.len)) as u32))
    }
    /// The offset, for checks of a mapped column ([`At::EMPTY`] is `u32::MAX`).
    pub fn offset(self) -> u32 {
        self.0
    }
    /// The first `len` bytes from the blob's place (its length, then its
    /// own bytes) as a span, to prefetch.
    fn span(self, len: usize) -> Span {
        let len = if self == At::EMPTY {
            0
        } else {
            len.min(u32::MAX as usize) as u32
        };
        Span { off: self.0, len }
    }
}

/// [`push_blob`], returning the span of the bytes themselves (a batch's
/// view of them; [`At::before`] gives the blob back).
pub fn push_blob_bytes(buf: &mut Vec<u8>, bytes: &[u8]) -> Span {
    push_blob(buf, bytes);
    Span {
        off: (buf.len() - bytes.len()) as u32,
        len: bytes.len() as u32,
    }
}

/// Appends `bytes` to a shard arena as a blob ([`At`]).
pub fn push_blob(arena: &mut Vec<u8>, bytes: &[u8]) -> At {
    if bytes.is_empty() {
        return At::EMPTY;
    }
    super::col::make_room(arena, bytes.len() + 10);
    let off = arena.len() as u32;
    crate::props::put_varint(arena, bytes.len() as u64);
    arena.extend_from_slice(bytes);
    At(off)
}

/// A growable bitset.
#[derive(Default, Clone)]
pub struct BitSet {
    words: Col<u64>,
}

impl BitSet {
    pub fn with_len(len: usize) -> BitSet {
        BitSet {
            words: Col::from(vec![0; len.div_ceil(64)]),
        }
    }
    /// The bits held by `words` (bit `i` in word `i / 64`, from the least significant).
    pub fn from_words(words: Col<u64>) -> BitSet {
        BitSet { words }
    }
    /// The words holding the bits.
    pub fn words(&self) -> &Col<u64> {
        &self.words
    }
    #[inline]
    pub fn get(&self, i: usize) -> bool {
        self.words.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
    #[inline]
    pub fn set(&mut self, i: usize, v: bool) {
        let w = i / 64;
        if w >= self.words.len() {
            self.words.to_mut().resize(w + 1, 0);
        }
        if v {
            self.words[w] |= 1 << (i % 64);
        } else {
            self.words[w] &= !(1 << (i % 64));
        }
    }
    /// Sets bit `i`; returns whether it was clear before.
    #[inline]
    pub fn insert(&mut self, i: usize) -> bool {
        let was = self.get(i);
        self.set(i, true);
        !was
    }
    pub fn clear(&mut self) {
        if self.words.iter().any(|&w| w != 0) {
            self.words.iter_mut().for_each(|w| *w = 0);
        }
    }
    pub fn count_ones(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }
    pub fn heap_bytes(&self) -> usize {
        self.words.heap_bytes()
    }
}

/// MurmurHash3's finaliser: spreads every input bit over the low byte used for sharding.
pub fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

/// The hash of a node version's content: equal contents, equal hashes.
pub fn content_hash(ty: Sym, state: Sym, cost: f32, creation_ts: u64, tags: &[u8], props: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write_u32(ty.to_raw());
    h.write_u32(state.to_raw());
    h.write_u32(cost.to_bits());
    h.write_u64(creation_ts);
    h.write_usize(tags.len());
    h.write(tags);
    h.write(props);
    fmix64(h.finish())
}

/// Bumped whenever decoding a node's wire form changes what the same
/// bytes decode to, so that no row keeps a fingerprint of another decoding
/// ([`source_fingerprint`]).
const SOURCE_FORM: u64 = 1;

/// The content hash of a node as its source sent it: its properties' bytes
/// (JSON, as received) and its cost, before anything is decoded. Equal
/// fingerprints mean equal content (the same bytes decode to the same
/// row); unequal ones say nothing, since other bytes may decode to the
/// same row (keys in another order). A row written from a source's node
/// keeps it as its content hash, so a later scan recognises an unchanged
/// node without decoding it, and a row whose hash differs has its
/// decoded fields compared before it counts as changed
/// (`NodeShard::same_content`). Never 0, the hash of no content.
pub fn source_fingerprint(properties: &[u8], cost: f64) -> u64 {
    let mut h = FxHasher::default();
    h.write_u64(SOURCE_FORM);
    h.write_u64(cost.to_bits());
    h.write(properties);
    fmix64(h.finish()).max(1)
}

/// Asks the processor to start loading the cache lines holding `x`, so a
/// read of it soon after does not wait on memory. Changes nothing else.
#[inline(always)]
pub fn prefetch<T>(x: &T) {
    let start = (x as *const T).cast::<u8>();
    let lines = (start as usize % 64 + std::mem::size_of::<T>().max(1) - 1) / 64 + 1;
    for line in 0..lines {
        prefetch_line(start.wrapping_add(64 * line));
    }
}

#[inline(always)]
fn prefetch_line(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it reads nothing into the program and
    // cannot fault, whatever the address (here always inside a value the
    // caller holds a reference to); SSE is part of every x86_64 processor.
    #[allow(unsafe_code)]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// Bytes of a physical id loaded ahead of comparing it: the whole of any
/// id the estates hold.
pub const ID_PREFETCH: usize = 256;

/// [`prefetch`]es every cache line of the first `len` bytes of `span` in `buf`.
pub fn prefetch_bytes(buf: &[u8], span: Span, len: usize) {
    for byte in line_starts(buf, span, len) {
        prefetch(byte);
    }
}

/// [`prefetch`]es every cache line of the first `len` bytes of blob `at` in `arena`.
pub fn prefetch_blob(arena: &[u8], at: At, len: usize) {
    prefetch_bytes(arena, at.span(len), len);
}

/// One byte in each cache line the first `len` bytes of `span` in `buf`
/// touch: the span's first byte, then the first byte of each next line.
fn line_starts(buf: &[u8], span: Span, len: usize) -> impl Iterator<Item = &u8> {
    let start = span.off as usize;
    let end = (start + len.min(span.len as usize)).min(buf.len());
    let mut at = start;
    std::iter::from_fn(move || {
        let byte = buf.get(at).filter(|_| at < end)?;
        at += 64 - (byte as *const u8 as usize) % 64;
        Some(byte)
    })
}

/// A step of asking memory for a row ahead of reading it
/// ([`Graph::prefetch_node`], and the ingest apply's loops): the row's own
/// entries first, then what they point at once they are in.
///
/// [`Graph::prefetch_node`]: super::Graph::prefetch_node
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Prefetch {
    /// The row's entries in its columns (or its batch's rows).
    Row,
    /// What those entries point at: bytes in an arena or a buffer, edge lists.
    Lists,
}

/// For item `i` of a walk over `items`: asks `f` to [`Prefetch::Row`] the
/// item `far` ahead and to [`Prefetch::Lists`] the one `far / 2` ahead,
/// whose row the first step loaded a while before.
pub fn prefetch_ahead<T: Copy>(items: &[T], i: usize, far: usize, mut f: impl FnMut(T, Prefetch)) {
    if let Some(&next) = items.get(i + far) {
        f(next, Prefetch::Row);
    }
    if let Some(&next) = items.get(i + far / 2) {
        f(next, Prefetch::Lists);
    }
}

// SAFETY: `Span` is `repr(C)` of two `u32`s (no padding); any values are a
// span (one out of bounds reads as empty, never out of the buffer).
#[allow(unsafe_code)]
unsafe impl Plain for Span {
    fn valid(_: &[u8]) -> bool {
        true
    }
}

// SAFETY: `At` is `repr(transparent)` over a `u32`; any value is a blob's
// place (one out of bounds reads as empty, never out of the arena).
#[allow(unsafe_code)]
unsafe impl Plain for At {
    fn valid(_: &[u8]) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blobs read back as written, empty ones take no bytes, and places
    /// past the arena or lengths past its end read as empty.
    #[test]
    fn blobs_read_back_and_bad_places_read_empty() {
        let mut arena = Vec::new();
        let long = vec![7u8; 300];
        let (a, e, b) = (
            push_blob(&mut arena, b"vol-1"),
            push_blob(&mut arena, b""),
            push_blob(&mut arena, &long),
        );
        assert_eq!(
            (a.get(&arena), e.get(&arena), b.get(&arena)),
            (&b"vol-1"[..], &b""[..], &long[..])
        );
        assert_eq!(e, At::EMPTY);
        assert_eq!(arena.len(), 1 + 5 + 2 + 300);
        assert_eq!(b.len(&arena), 300);
        assert_eq!(a.get_str(&arena), "vol-1");
        assert!(At(arena.len() as u32).get(&arena).is_empty());
        assert!(b.get(&arena[..arena.len() - 1]).is_empty());
        assert!(At(0).get(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).is_empty());
        let mut buf = b"xy".to_vec();
        for bytes in [&b"a"[..], b"", &long] {
            let span = push_blob_bytes(&mut buf, bytes);
            assert_eq!((span.get(&buf), At::before(span).get(&buf)), (bytes, bytes));
        }
    }

    /// Every cache line of a span is reached once, from wherever in a line
    /// the span starts, and nothing past its first `len` bytes.
    #[test]
    fn prefetching_a_span_reaches_each_of_its_lines() {
        let buf = vec![0u8; 1024];
        let base = buf.as_ptr() as usize;
        for off in 0..200u32 {
            for len in [0u32, 1, 2, 63, 64, 65, 100, 128, 300] {
                for cap in [1usize, 64, 256, usize::MAX] {
                    let span = Span { off, len };
                    let end = off as usize + (len as usize).min(cap);
                    let lines: Vec<usize> = line_starts(&buf, span, cap)
                        .map(|b| b as *const u8 as usize - base)
                        .collect();
                    let want: Vec<usize> = (off as usize..end)
                        .filter(|&i| i == off as usize || (base + i).is_multiple_of(64))
                        .collect();
                    assert_eq!(lines, want, "span {off}+{len}, first {cap} bytes");
                }
            }
        }
        // A span running past the buffer stops at its end.
        assert_eq!(line_starts(&buf, Span { off: 1000, len: 100 }, usize::MAX).count(), {
            let first = 1000;
            1 + (first + 1..1024).filter(|&i| (base + i).is_multiple_of(64)).count()
        });
    }
}

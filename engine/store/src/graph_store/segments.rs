//! Segments, the values of the `segments` table: the records of one part
//! (nodes or edges) and one segment shard of a commit, each record its key
//! length, key, value length and value (lengths `u32` LE). A key's shard is
//! its FNV-1a hash modulo [`SEGMENT_SHARDS`]. Stored LZ4-compressed behind
//! their length; stores written before compression hold them plain.
//!
//! Building a commit's segments in parallel, reading their records back,
//! and replaying a shard's segments (the last record of each key wins).

use std::collections::HashMap;

use rayon::prelude::*;

use crate::bytes::DecodeError;

/// Segments per part. Fixed forever: a row must land in the same segment shard in every commit.
pub(super) const SEGMENT_SHARDS: u16 = 256;

/// A key's segment shard is its FNV-1a hash modulo [`SEGMENT_SHARDS`]:
/// stable across versions, so a key's segment shard never moves.
pub(super) fn segment_shard(key: &[u8]) -> u16 {
    shard_of(fnv(FNV_START, key))
}

/// FNV-1a's state before any byte.
pub(super) const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a's state after `bytes`, from state `h`: a key's hash can be
/// carried on from the hash of its first part.
pub(super) fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

const FNV_PRIME: u64 = 0x0100_0000_01b3;

pub(super) fn shard_of(hash: u64) -> u16 {
    (hash % u64::from(SEGMENT_SHARDS)) as u16
}

/// [`fnv`] of each `(state, bytes)`, the state replaced by the result. Four
/// at a time: one hash is a chain of dependent multiplies, four are
/// independent chains the processor runs side by side.
pub(super) fn fnv_all(jobs: &mut [(u64, &[u8])]) {
    let mut quads = jobs.chunks_exact_mut(4);
    for q in &mut quads {
        let n = q.iter().map(|(_, b)| b.len()).min().unwrap_or(0);
        let mut h = [q[0].0, q[1].0, q[2].0, q[3].0];
        for (((a, b), c), d) in q[0].1[..n].iter().zip(&q[1].1[..n]).zip(&q[2].1[..n]).zip(&q[3].1[..n]) {
            h[0] = (h[0] ^ u64::from(*a)).wrapping_mul(FNV_PRIME);
            h[1] = (h[1] ^ u64::from(*b)).wrapping_mul(FNV_PRIME);
            h[2] = (h[2] ^ u64::from(*c)).wrapping_mul(FNV_PRIME);
            h[3] = (h[3] ^ u64::from(*d)).wrapping_mul(FNV_PRIME);
        }
        for (job, h) in q.iter_mut().zip(h) {
            job.0 = fnv(h, &job.1[n..]);
        }
    }
    for job in quads.into_remainder() {
        job.0 = fnv(job.0, job.1);
    }
}

/// A stored segment longer than this is kept in pieces of this length (the
/// last one shorter), each under a key of its own. redb gives a value a
/// page of a power of two of 4 KiB pages and copies it whole when the next
/// key is inserted beside it, so a 10 MB segment in one value took a 16 MB
/// page and was written two to three times over in a commit; a piece
/// fills a 1 MiB page.
pub(super) const PIECE_BYTES: usize = (1 << 20) - 64;

/// Pieces of one segment at most: the piece's number is kept in the key's
/// shard field, above the shard (`shard + piece * SEGMENT_SHARDS`).
const MAX_PIECES: usize = (u16::MAX as usize + 1) / SEGMENT_SHARDS as usize;

/// A stored segment of `shard` cut into pieces, each with the shard field
/// of its key. Pieces are longer than [`PIECE_BYTES`] only when a segment
/// would need more than [`MAX_PIECES`] of them.
pub(super) fn pieces(shard: u16, stored: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    let len = PIECE_BYTES.max(stored.len().div_ceil(MAX_PIECES));
    stored
        .chunks(len)
        .enumerate()
        .map(move |(i, piece)| (shard + i as u16 * SEGMENT_SHARDS, piece))
}

/// The shard and the piece a key's shard field names.
pub(super) fn piece_of(field: u16) -> (u16, u16) {
    (field % SEGMENT_SHARDS, field / SEGMENT_SHARDS)
}

/// Iterates `(key, value)` records; `Err` at the first malformed one.
pub(super) fn records(mut buf: &[u8]) -> impl Iterator<Item = Result<(&[u8], &[u8]), DecodeError>> {
    std::iter::from_fn(move || {
        if buf.is_empty() {
            return None;
        }
        let mut take = |what: &'static str| -> Result<&[u8], DecodeError> {
            let len_bytes = buf.get(..4).ok_or(DecodeError(what))?;
            let len = u32::from_le_bytes([len_bytes[0], len_bytes[1], len_bytes[2], len_bytes[3]]) as usize;
            let body = buf.get(4..4 + len).ok_or(DecodeError(what))?;
            buf = &buf[4 + len..];
            Ok(body)
        };
        let item = take("record key").and_then(|k| Ok((k, take("record value")?)));
        if item.is_err() {
            buf = &[];
        }
        Some(item)
    })
}

/// A segment as stored: LZ4 behind its length (u32 LE).
pub(super) fn compress(segment: &[u8]) -> Vec<u8> {
    lz4_flex::block::compress_prepend_size(segment)
}

/// The segment [`compress`] stored. A length LZ4 could not have come from
/// (it expands at most 255 times) is refused before anything is allocated.
pub(super) fn decompress(stored: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let bad = DecodeError("compressed segment");
    let (len, body) = stored.split_first_chunk::<4>().ok_or(bad)?;
    let len = u32::from_le_bytes(*len) as usize;
    if len > body.len().saturating_mul(255).saturating_add(16) {
        return Err(DecodeError("compressed segment length"));
    }
    let out = lz4_flex::block::decompress(body, len).map_err(|_| DecodeError("compressed segment"))?;
    if out.len() != len {
        return Err(DecodeError("compressed segment length"));
    }
    Ok(out)
}

/// A stored segment's records, decompressed when it was written compressed.
pub(super) fn plain(stored: &(bool, Vec<u8>)) -> Result<std::borrow::Cow<'_, [u8]>, DecodeError> {
    match stored {
        (true, bytes) => decompress(bytes).map(std::borrow::Cow::Owned),
        (false, bytes) => Ok(std::borrow::Cow::Borrowed(bytes.as_slice())),
    }
}

/// A run's records, each as (segment shard, length), and its bytes per shard.
type RunPlacement = (Vec<(u16, u32)>, Vec<usize>);

/// Where each item's record goes: the items cut into runs of `run_len`,
/// and per run each record's segment shard and length and the run's bytes
/// in every shard. Built once ([`place`]); the shards' buffers are then
/// filled a range of shards at a time ([`fill`]), so a commit need not
/// hold every shard's buffer at once.
pub(super) struct Placement {
    run_len: usize,
    runs: Vec<RunPlacement>,
}

/// The [`Placement`] of `items`. `place` pushes the segment shard and key
/// length of each item of a run, in order; `value_len` is an item's
/// value's length.
pub(super) fn place<T: Sync>(
    items: &[T],
    place: impl Fn(&[T], &mut Vec<(u16, u32)>) + Sync,
    value_len: impl Fn(&T) -> usize + Sync,
) -> Placement {
    let shards = SEGMENT_SHARDS as usize;
    let run_len = items.len().div_ceil(4 * rayon::current_num_threads()).max(4096);
    let runs = items
        .par_chunks(run_len)
        .map(|run| {
            let (mut placed, mut size) = (Vec::with_capacity(run.len()), vec![0usize; shards]);
            place(run, &mut placed);
            for (item, (shard, len)) in run.iter().zip(&mut placed) {
                *len += (8 + value_len(item)) as u32;
                size[usize::from(*shard)] += *len as usize;
            }
            (placed, size)
        })
        .collect();
    Placement { run_len, runs }
}

/// The buffers of segment shards `shards` (the first is `shards.start`'s),
/// each allocated at its size and holding its records in item order.
/// `key` and `value` write an item's key and value.
///
/// Items are read in their own order: each run owns, in every shard's
/// buffer, the piece its records fill, so a run's worker writes them in
/// item order with no other worker in that piece; reads stay sequential
/// over the rows (which are scattered over the shards) and each shard's
/// buffer still holds its records in item order.
pub(super) fn fill<T: Sync>(
    items: &[T],
    placement: &Placement,
    shards: std::ops::Range<u16>,
    key: impl Fn(&T, &mut Vec<u8>) + Sync,
    value: impl Fn(&T, &mut Vec<u8>) + Sync,
) -> Vec<Vec<u8>> {
    let range = usize::from(shards.start)..usize::from(shards.end);
    let mut out: Vec<Vec<u8>> = range
        .clone()
        .map(|s| vec![0u8; placement.runs.iter().map(|(_, size)| size[s]).sum()])
        .collect();
    // Per run, its piece of every buffer filled now.
    let mut pieces: Vec<Vec<&mut [u8]>> = placement.runs.iter().map(|_| Vec::with_capacity(out.len())).collect();
    for (s, buf) in range.clone().zip(out.iter_mut()) {
        let mut rest = buf.as_mut_slice();
        for ((_, size), piece) in placement.runs.iter().zip(&mut pieces) {
            let (mine, after) = rest.split_at_mut(size[s]);
            piece.push(mine);
            rest = after;
        }
    }
    pieces
        .into_par_iter()
        .zip(items.par_chunks(placement.run_len))
        .zip(&placement.runs)
        .for_each(|((mut piece, run), (placed, _))| {
            let (mut k, mut v) = (Vec::new(), Vec::new());
            for (item, &(shard, len)) in run.iter().zip(placed) {
                let Some(at) = usize::from(shard)
                    .checked_sub(range.start)
                    .filter(|&at| at < piece.len())
                else {
                    continue;
                };
                k.clear();
                v.clear();
                key(item, &mut k);
                value(item, &mut v);
                let dst = std::mem::take(&mut piece[at]);
                let (record, rest) = dst.split_at_mut(len as usize);
                write_record(record, &k, &v);
                piece[at] = rest;
            }
        });
    out
}

/// A `place` for [`place`] from each item's key, written into a scratch
/// buffer and hashed.
pub(super) fn by_key<T>(key: impl Fn(&T, &mut Vec<u8>)) -> impl Fn(&[T], &mut Vec<(u16, u32)>) {
    move |run, placed| {
        let mut k = Vec::new();
        placed.extend(run.iter().map(|item| {
            k.clear();
            key(item, &mut k);
            (segment_shard(&k), k.len() as u32)
        }));
    }
}

/// A record: key length, key, value length, value (lengths `u32` little
/// endian), into a slice of exactly its length.
pub(super) fn write_record(dst: &mut [u8], key: &[u8], value: &[u8]) {
    let (klen, rest) = dst.split_at_mut(4);
    klen.copy_from_slice(&(key.len() as u32).to_le_bytes());
    let (k, rest) = rest.split_at_mut(key.len());
    k.copy_from_slice(key);
    let (vlen, v) = rest.split_at_mut(4);
    vlen.copy_from_slice(&(value.len() as u32).to_le_bytes());
    v.copy_from_slice(value);
}

/// Replays segments in order: the last record of each key wins.
pub(super) fn replay<S: AsRef<[u8]>>(segs: &[S]) -> Result<HashMap<&[u8], &[u8]>, DecodeError> {
    let mut map: HashMap<&[u8], &[u8]> = HashMap::new();
    for seg in segs.iter().map(AsRef::as_ref) {
        for rec in records(seg) {
            let (k, v) = rec?;
            map.insert(k, v);
        }
    }
    Ok(map)
}

//! `graph.snap`: the in-memory graph as raw columns, for a fast start.
//!
//! After every commit the engine writes each shard's columns and arena, as
//! they are, to a temporary file and renames it over `graph.snap`. At start,
//! a snapshot whose generation, scan and symbol count match `graph.redb` is
//! loaded shard by shard in parallel, and only the hash indexes and the
//! adjacency are rebuilt; anything else (missing, stale, truncated, a
//! checksum mismatch) is ignored with a warning and the graph is replayed
//! from `graph.redb`, which stays the source of truth. Not FlatBuffers: a
//! FlatBuffers graph names everything by string, and loading it would mean
//! interning every string again.

use std::hash::Hasher;
use std::io::Write;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use rustc_hash::FxHasher;

use super::bytes::{DecodeError, Reader, Writer};
use super::graph_store::CommitMeta;
use svc_graph::graph::{BitSet, EdgeShard, Graph, NodeShard, Phase, Reachability, Span};
use svc_graph::ids::{EDGE_SHARDS, NODE_SHARDS, NodeId, Sym};
use svc_graph::relation::Relation;

const MAGIC: &[u8; 8] = b"SVCSNAP\x02";
const END: &[u8; 8] = b"SVCSNAPE";

/// What a snapshot must match to be used.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SnapshotKey {
    pub generation: u64,
    pub scan_seq: u64,
    pub commit_us: u64,
    pub symbols: u64,
}

impl SnapshotKey {
    pub fn new(meta: &CommitMeta, symbols: usize) -> SnapshotKey {
        SnapshotKey {
            generation: meta.generation,
            scan_seq: meta.scan_seq,
            commit_us: meta.commit_us,
            symbols: symbols as u64,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("snapshot {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("snapshot {path} is malformed: {cause}")]
    Malformed { path: PathBuf, cause: DecodeError },
    #[error("snapshot {path} is stale (it holds {found:?}, the store is at {want:?})")]
    Stale {
        path: PathBuf,
        found: SnapshotKey,
        want: SnapshotKey,
    },
}

/// The header buffer [`Encoded::write_to`] fills, through [`Writer`].
struct W(Vec<u8>);

impl W {
    fn u64s(&mut self, v: impl IntoIterator<Item = u64>) {
        Writer::new(&mut self.0).u64s(v);
    }
}

/// `n` symbols; raw 0 is `what`.
fn syms(r: &mut Reader<'_>, n: usize, what: &'static str) -> Result<Vec<Sym>, DecodeError> {
    r.u32s(n, what)?
        .map(|v| Sym::from_raw(v).ok_or(DecodeError(what)))
        .collect()
}

/// `n` spans (offset and length, `u32` each), every one inside an arena of
/// `arena_len` bytes.
fn spans(r: &mut Reader<'_>, n: usize, arena_len: usize, what: &'static str) -> Result<Vec<Span>, DecodeError> {
    r.arrays::<8>(n, what)?
        .iter()
        .map(|&[a, b, c, d, e, f, g, h]| {
            let s = Span {
                off: u32::from_le_bytes([a, b, c, d]),
                len: u32::from_le_bytes([e, f, g, h]),
            };
            if (s.off as usize + s.len as usize) <= arena_len {
                Ok(s)
            } else {
                Err(DecodeError(what))
            }
        })
        .collect()
}

fn checksum(b: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(b);
    h.write_usize(b.len());
    h.finish()
}

fn encode_nodes(s: &NodeShard) -> Vec<u8> {
    let n = s.len();
    let mut out = Vec::with_capacity(n * 140 + s.arena.len() + 64);
    let mut w = Writer::new(&mut out);
    w.u64s([n as u64, u64::from(s.generation)]);
    w.bytes64(&s.arena);
    w.u64s(s.hash.iter().copied());
    w.u32s(s.key.iter().flat_map(|k| k.map(Sym::to_raw)));
    w.u32s(s.id.iter().flat_map(|x| [x.off, x.len]));
    w.u32s(s.ty.iter().map(|x| x.to_raw()));
    w.u32s(s.state.iter().map(|x| x.to_raw()));
    w.u32s(s.cost.iter().map(|x| x.to_bits()));
    w.u64s(s.creation_ts.iter().copied());
    w.u64s(s.valid_from.iter().copied());
    w.u64s(s.valid_to.iter().copied());
    w.u8s((0..n).map(|r| u8::from(s.waste.get(r))));
    w.u32s(s.waste_reason.iter().flat_map(|x| [x.off, x.len]));
    w.u32s(s.risk.iter().map(|x| x.to_bits()));
    w.u8s(s.reach.iter().map(|x| *x as u8));
    w.u8s(s.phase.iter().map(|x| *x as u8));
    w.u32s(s.verdict.iter().map(|x| x.map_or(0, Sym::to_raw)));
    w.u32s(s.tags.iter().flat_map(|x| [x.off, x.len]));
    w.u32s(s.props.iter().flat_map(|x| [x.off, x.len]));
    w.u64s(s.content.iter().copied());
    w.u32s(s.seen.iter().copied());
    out
}

/// A node shard from its snapshot section (as [`encode`] wrote it), with
/// its hash index rebuilt.
pub fn decode_nodes(b: &[u8]) -> Result<NodeShard, DecodeError> {
    let mut r = Reader::new(b);
    let n = usize::try_from(r.u64("node count")?).map_err(|_| DecodeError("node count"))?;
    if n > b.len() {
        return Err(DecodeError("node count"));
    }
    let generation = u32::try_from(r.u64("generation")?).map_err(|_| DecodeError("generation"))?;
    let arena = r.bytes64("node arena")?.to_vec();
    let a = arena.len();
    let mut s = NodeShard {
        generation,
        ..NodeShard::default()
    };
    s.hash = r.u64s(n, "hash")?.collect();
    let keys = syms(&mut r, 5 * n, "key")?;
    s.key = keys.chunks_exact(5).map(|k| [k[0], k[1], k[2], k[3], k[4]]).collect();
    s.id = spans(&mut r, n, a, "id")?;
    s.ty = syms(&mut r, n, "type")?;
    s.state = syms(&mut r, n, "state")?;
    s.cost = r.u32s(n, "cost")?.map(f32::from_bits).collect();
    s.creation_ts = r.u64s(n, "creation_ts")?.collect();
    s.valid_from = r.u64s(n, "valid_from")?.collect();
    s.valid_to = r.u64s(n, "valid_to")?.collect();
    let waste = r.u8s(n, "waste")?;
    s.waste = BitSet::with_len(n);
    for (i, w) in waste.iter().enumerate() {
        s.waste.set(i, *w != 0);
    }
    s.waste_reason = spans(&mut r, n, a, "waste_reason")?;
    s.risk = r.u32s(n, "risk")?.map(f32::from_bits).collect();
    s.reach = r
        .u8s(n, "reachability")?
        .iter()
        .map(|v| Reachability::from_u8(*v))
        .collect();
    s.phase = r.u8s(n, "phase")?.iter().map(|v| Phase::from_u8(*v)).collect();
    s.verdict = r.u32s(n, "verdict")?.map(Sym::from_raw).collect();
    s.tags = spans(&mut r, n, a, "tags")?;
    s.props = spans(&mut r, n, a, "props")?;
    s.content = r.u64s(n, "content")?.collect();
    s.seen = r.u32s(n, "seen")?.collect();
    r.end("trailing bytes in node shard")?;
    s.arena = arena;
    s.rebuild_index();
    Ok(s)
}

fn encode_edges(s: &EdgeShard) -> Vec<u8> {
    let n = s.len();
    let mut out = Vec::with_capacity(n * 64 + s.arena.len() + 64);
    let mut w = Writer::new(&mut out);
    w.u64s([n as u64]);
    w.bytes64(&s.arena);
    w.u64s(s.src.iter().map(|x| x.to_raw()));
    w.u64s(s.dst.iter().map(|x| x.to_raw()));
    w.u8s(s.rel.iter().map(|x| *x as u8));
    w.u8s((0..n).map(|r| u8::from(s.inferred.get(r))));
    w.u64s(s.valid_from.iter().copied());
    w.u64s(s.valid_to.iter().copied());
    w.u32s(s.props.iter().flat_map(|x| [x.off, x.len]));
    w.u32s(s.seen.iter().copied());
    out
}

/// An edge shard from its snapshot section (as [`encode`] wrote it), every
/// endpoint a row of `nodes`, with its hash index rebuilt.
pub fn decode_edges(b: &[u8], nodes: &[NodeShard]) -> Result<EdgeShard, DecodeError> {
    let mut r = Reader::new(b);
    let n = usize::try_from(r.u64("edge count")?).map_err(|_| DecodeError("edge count"))?;
    if n > b.len() {
        return Err(DecodeError("edge count"));
    }
    let arena = r.bytes64("edge arena")?.to_vec();
    let node_ok = |id: NodeId| nodes.get(id.shard()).is_some_and(|s| (id.row() as usize) < s.len());
    let ids = |r: &mut Reader<'_>, what| -> Result<Vec<NodeId>, DecodeError> {
        r.u64s(n, what)?
            .map(|v| {
                Some(NodeId::from_raw(v))
                    .filter(|id| node_ok(*id))
                    .ok_or(DecodeError(what))
            })
            .collect()
    };
    let mut s = EdgeShard {
        src: ids(&mut r, "source")?,
        dst: ids(&mut r, "target")?,
        ..EdgeShard::default()
    };
    s.rel = r
        .u8s(n, "relation")?
        .iter()
        .map(|v| Relation::from_u8(*v).ok_or(DecodeError("relation")))
        .collect::<Result<_, _>>()?;
    let inferred = r.u8s(n, "inferred")?;
    s.inferred = BitSet::with_len(n);
    for (i, v) in inferred.iter().enumerate() {
        s.inferred.set(i, *v != 0);
    }
    s.valid_from = r.u64s(n, "valid_from")?.collect();
    s.valid_to = r.u64s(n, "valid_to")?.collect();
    s.props = spans(&mut r, n, arena.len(), "props")?;
    s.seen = r.u32s(n, "seen")?.collect();
    r.end("trailing bytes in edge shard")?;
    s.arena = arena;
    s.rebuild_index();
    Ok(s)
}

/// Writes the graph to `path` atomically (temporary file, fsync, rename).
pub fn write(path: &Path, graph: &Graph, key: SnapshotKey) -> Result<u64, SnapshotError> {
    encode(graph, key).write(path)
}

/// A snapshot encoded in memory, not yet on disk: taken under the graph's
/// read lock (a parallel pass over the shards), written without it.
pub struct Encoded {
    key: SnapshotKey,
    sections: Vec<Vec<u8>>,
}

/// Encodes every shard of `graph` as the snapshot of `key`.
pub fn encode(graph: &Graph, key: SnapshotKey) -> Encoded {
    let (nodes, edges): (Vec<Vec<u8>>, Vec<Vec<u8>>) = rayon::join(
        || graph.node_shards().par_iter().map(encode_nodes).collect(),
        || graph.edge_shards().par_iter().map(encode_edges).collect(),
    );
    let mut sections = nodes;
    sections.extend(edges);
    Encoded { key, sections }
}

impl Encoded {
    pub fn key(&self) -> SnapshotKey {
        self.key
    }

    /// Writes the snapshot over `path` atomically ([`crate::atomic`]), so a
    /// reader sees the old snapshot or the new one, never a part. Returns
    /// the bytes written. When any step fails the temporary file is
    /// removed: a part written to a full disk would otherwise hold its
    /// space (hundreds of megabytes at 1M nodes) until the next snapshot,
    /// while the stores need it.
    pub fn write(&self, path: &Path) -> Result<u64, SnapshotError> {
        let mut total = 0;
        crate::atomic::write_atomic(path, |file| {
            total = self.write_to(file)?;
            Ok(())
        })
        .map(|()| total)
        .map_err(|source| SnapshotError::Io {
            path: path.to_owned(),
            source,
        })
    }

    /// The snapshot's bytes into `file`, flushed.
    fn write_to(&self, file: &mut std::fs::File) -> std::io::Result<u64> {
        let mut f = std::io::BufWriter::with_capacity(1 << 20, file);
        let mut header = W(Vec::with_capacity(48));
        header.0.extend_from_slice(MAGIC);
        let key = self.key;
        header.u64s([key.generation, key.scan_seq, key.commit_us, key.symbols]);
        f.write_all(&header.0)?;
        let mut total = header.0.len() as u64;
        for section in &self.sections {
            f.write_all(&(section.len() as u64).to_le_bytes())?;
            f.write_all(section)?;
            f.write_all(&checksum(section).to_le_bytes())?;
            total += section.len() as u64 + 16;
        }
        f.write_all(END)?;
        f.flush()?;
        Ok(total + 8)
    }
}

/// Node and edge shards read from a snapshot.
pub struct Shards {
    pub nodes: Vec<NodeShard>,
    pub edges: Vec<EdgeShard>,
}

/// Reads a snapshot that matches `want`.
pub fn read(path: &Path, want: SnapshotKey) -> Result<Shards, SnapshotError> {
    let bytes = std::fs::read(path).map_err(|source| SnapshotError::Io {
        path: path.to_owned(),
        source,
    })?;
    let bad = |cause| SnapshotError::Malformed {
        path: path.to_owned(),
        cause,
    };
    let mut r = Reader::new(&bytes);
    if r.take(8, "magic").map_err(bad)? != MAGIC {
        return Err(bad(DecodeError("not an svc snapshot")));
    }
    let mut header = || r.u64("header").map_err(bad);
    let found = SnapshotKey {
        generation: header()?,
        scan_seq: header()?,
        commit_us: header()?,
        symbols: header()?,
    };
    if found != want {
        return Err(SnapshotError::Stale {
            path: path.to_owned(),
            found,
            want,
        });
    }
    let mut sections = Vec::with_capacity(NODE_SHARDS + EDGE_SHARDS);
    for _ in 0..NODE_SHARDS + EDGE_SHARDS {
        let body = r.bytes64("section").map_err(bad)?;
        let sum = r.u64("section checksum").map_err(bad)?;
        sections.push((body, sum));
    }
    if r.take(8, "end marker").map_err(bad)? != END || !r.is_empty() {
        return Err(bad(DecodeError("end marker")));
    }
    if sections.par_iter().any(|(body, sum)| checksum(body) != *sum) {
        return Err(bad(DecodeError("checksum mismatch")));
    }
    let nodes: Vec<NodeShard> = sections[..NODE_SHARDS]
        .par_iter()
        .map(|(b, _)| decode_nodes(b))
        .collect::<Result<_, _>>()
        .map_err(bad)?;
    let edges: Vec<EdgeShard> = sections[NODE_SHARDS..]
        .par_iter()
        .map(|(b, _)| decode_edges(b, &nodes))
        .collect::<Result<_, _>>()
        .map_err(bad)?;
    Ok(Shards { nodes, edges })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn arbitrary_sections_never_panic_the_decoders(count in 0u64..4, tail in proptest::collection::vec(any::<u8>(), 0..400)) {
            let b = [&count.to_le_bytes()[..], &tail].concat();
            let nodes: Vec<NodeShard> = decode_nodes(&b).into_iter().collect();
            let _ = decode_edges(&b, &nodes);
            let _ = decode_edges(&tail, &[]);
        }
    }
}

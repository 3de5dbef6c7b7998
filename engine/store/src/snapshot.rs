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
use super::kinds::Stored;
use svc_graph::graph::schema::{Bytes, F32, Flag, Key, MaybeSymbol, Reach, Rel, Stage, Symbol, Text, U64};
use svc_graph::graph::{EdgeShard, Graph, NodeShard};
use svc_graph::ids::{EDGE_SHARDS, NODE_SHARDS, NodeId};

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

fn checksum(b: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(b);
    h.write_usize(b.len());
    h.finish()
}

/// The shards' snapshot sections, from the schema.
macro_rules! node_section {
    (
        identity { $($(#[$idoc:meta])* $ifield:ident / $icol:ident : $ikind:ident = $iname:literal,)* }
        fields { $($(#[$doc:meta])* $field:ident / $col:ident : $kind:ident = $name:literal,)* }
    ) => {
        /// A node shard's section: its row count and generation, its arena,
        /// the key hashes, a column for each field of the schema in order,
        /// the content hashes and the scan that last saw each row.
        fn encode_nodes(s: &NodeShard) -> Vec<u8> {
            let n = s.len();
            let mut out = Vec::with_capacity(n * 140 + s.arena.len() + 64);
            let mut w = Writer::new(&mut out);
            w.u64s([n as u64, u64::from(s.generation)]);
            w.bytes64(&s.arena);
            w.u64s(s.hash.iter().copied());
            $($ikind::write_column(&mut w, &s.$icol, n);)*
            $($kind::write_column(&mut w, &s.$col, n);)*
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
            // A generation is 24 bits: a node id carries no more of it.
            let generation = u32::try_from(r.u64("generation")?)
                .ok()
                .filter(|&g| g <= NodeId::MAX_GENERATION)
                .ok_or(DecodeError("generation"))?;
            let arena = r.bytes64("node arena")?.to_vec();
            let a = arena.len();
            let hash = r.u64s(n, "hash")?.collect();
            $(let $icol = $ikind::read_column(&mut r, n, a, $iname)?;)*
            $(let $col = $kind::read_column(&mut r, n, a, $name)?;)*
            let mut s = NodeShard {
                generation,
                hash,
                $($icol,)*
                $($col,)*
                content: r.u64s(n, "content")?.collect(),
                seen: r.u32s(n, "seen")?.collect(),
                ..NodeShard::default()
            };
            r.end("trailing bytes in node shard")?;
            s.arena = arena;
            s.rebuild_index();
            Ok(s)
        }
    };
}

svc_graph::node_schema!(node_section);

/// The edge shards' snapshot sections, from the schema.
macro_rules! edge_section {
    ($($(#[$doc:meta])* $field:ident / $col:ident : $kind:ident = $name:literal,)*) => {
        /// An edge shard's section: its row count, its arena, the sources
        /// and targets, a column for each field of the schema in order,
        /// and the scan that last saw each row.
        fn encode_edges(s: &EdgeShard) -> Vec<u8> {
            let n = s.len();
            let mut out = Vec::with_capacity(n * 64 + s.arena.len() + 64);
            let mut w = Writer::new(&mut out);
            w.u64s([n as u64]);
            w.bytes64(&s.arena);
            w.u64s(s.src.iter().map(|x| x.to_raw()));
            w.u64s(s.dst.iter().map(|x| x.to_raw()));
            $($kind::write_column(&mut w, &s.$col, n);)*
            w.u32s(s.seen.iter().copied());
            out
        }

        /// An edge shard from its snapshot section (as [`encode`] wrote it), every
        /// endpoint a row of `nodes` of that shard's generation, with its hash
        /// index rebuilt.
        pub fn decode_edges(b: &[u8], nodes: &[NodeShard]) -> Result<EdgeShard, DecodeError> {
            let mut r = Reader::new(b);
            let n = usize::try_from(r.u64("edge count")?).map_err(|_| DecodeError("edge count"))?;
            if n > b.len() {
                return Err(DecodeError("edge count"));
            }
            let arena = r.bytes64("edge arena")?.to_vec();
            let a = arena.len();
            let node_ok = |id: NodeId| {
                nodes
                    .get(id.shard())
                    .is_some_and(|s| (id.row() as usize) < s.len() && s.generation == id.generation())
            };
            let ids = |r: &mut Reader<'_>, what| -> Result<Vec<NodeId>, DecodeError> {
                r.u64s(n, what)?
                    .map(|v| {
                        Some(NodeId::from_raw(v))
                            .filter(|id| node_ok(*id))
                            .ok_or(DecodeError(what))
                    })
                    .collect()
            };
            let src = ids(&mut r, "source")?;
            let dst = ids(&mut r, "target")?;
            $(let $col = $kind::read_column(&mut r, n, a, $name)?;)*
            let mut s = EdgeShard {
                src,
                dst,
                $($col,)*
                seen: r.u32s(n, "seen")?.collect(),
                ..EdgeShard::default()
            };
            r.end("trailing bytes in edge shard")?;
            s.arena = arena;
            s.rebuild_index();
            Ok(s)
        }
    };
}

svc_graph::edge_schema!(edge_section);

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
    use svc_graph::graph::shard::HeldProps;
    use svc_graph::graph::{NodeRow, Phase, Reachability};
    use svc_graph::ids::Sym;
    use svc_graph::relation::Relation;

    /// The sections' layouts, spelled out byte by byte: the schema's order
    /// is the stored order, and a section reads back as it was.
    #[test]
    fn sections_keep_their_layout() {
        let sym = |raw| Sym::from_raw(raw).unwrap();
        let row = NodeRow {
            key: [sym(1), sym(2), sym(3), sym(4), sym(5)],
            id: "i".into(),
            ty: sym(6),
            state: sym(7),
            cost_usd_mo: 1.5,
            creation_ts: 8,
            valid_from: 9,
            valid_to: 10,
            is_waste: true,
            waste_reason: "w".into(),
            risk_score: 2.0,
            reachability: Reachability::Unreachable,
            phase: Phase::Codegen,
            verdict: Some(sym(11)),
            tags: vec![0xaa],
            props: vec![0xbb],
        };
        let mut nodes = NodeShard::default();
        nodes.load(0x1234, &row);
        let u32s = |v: &[u32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let u64s = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let want = [
            u64s(&[1, 0, 4]),
            b"iw\xaa\xbb".to_vec(),
            u64s(&[0x1234]),
            u32s(&[1, 2, 3, 4, 5, 0, 1, 6, 7, 1.5f32.to_bits()]),
            u64s(&[8, 9, 10]),
            vec![1],
            u32s(&[1, 1, 2.0f32.to_bits()]),
            vec![2, 3],
            u32s(&[11, 2, 1, 3, 1]),
            u64s(&[nodes.content[0]]),
            u32s(&[0]),
        ]
        .concat();
        assert_eq!(encode_nodes(&nodes), want);
        let back = decode_nodes(&want).unwrap();
        assert_eq!(back.row(0), row);
        assert_eq!(back.find(0x1234, &row.key, b"i"), Some(0));

        let end = NodeId::new(0, 0, 0);
        let mut edges = EdgeShard::default();
        let rel = Relation::ALL[3];
        edges.upsert(
            end,
            end,
            rel,
            true,
            &[0xcc],
            &mut HeldProps::default(),
            0,
            7,
            Some((5, 6)),
        );
        let want = [
            u64s(&[1, 1]),
            vec![0xcc],
            u64s(&[end.to_raw(), end.to_raw()]),
            vec![rel as u8, 1],
            u64s(&[5, 6]),
            u32s(&[0, 1, 7]),
        ]
        .concat();
        assert_eq!(encode_edges(&edges), want);
        let back = decode_edges(&want, std::slice::from_ref(&nodes)).unwrap();
        assert_eq!(back.fields(0).to_version(String::new(), String::new()).props, [0xcc]);
        assert_eq!(back.find(end, end, rel), Some(0));
    }

    /// A node id carries 24 bits of a shard's generation, so a section
    /// naming a larger one is refused rather than loaded as ids that never
    /// match their shard.
    #[test]
    fn a_generation_wider_than_an_id_is_refused() {
        let section = |generation: u64| {
            let shard = NodeShard {
                generation: NodeId::MAX_GENERATION,
                ..NodeShard::default()
            };
            let mut b = encode_nodes(&shard);
            b[8..16].copy_from_slice(&generation.to_le_bytes());
            b
        };
        let max = u64::from(NodeId::MAX_GENERATION);
        assert_eq!(decode_nodes(&section(max)).unwrap().generation, NodeId::MAX_GENERATION);
        assert_eq!(decode_nodes(&section(max + 1)).err(), Some(DecodeError("generation")));
    }

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

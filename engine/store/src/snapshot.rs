//! `graph.snap`: the in-memory graph as raw columns, for a fast start.
//!
//! After every commit the engine writes each shard's columns and arena, as
//! they are in memory, to a temporary file and renames it over `graph.snap`.
//! At start, a snapshot whose generation, scan and symbol count match
//! `graph.redb` is mapped (`memmap2`), one mapping a shard's section, and
//! its columns are read where they lie: each column of a loaded shard is a
//! [`Col`] over the mapping, checked (bounds, alignment, values, spans,
//! edge endpoints) but neither copied nor parsed, and copied into owned
//! memory only when first written. A section's mapping goes when the last
//! of its columns has been written. Only the hash indexes and the
//! adjacency are rebuilt. Anything else (missing, stale, truncated, a
//! checksum mismatch, a value no column holds) is ignored with a warning
//! and the graph is replayed from `graph.redb`, which stays the source of
//! truth. Not FlatBuffers: a FlatBuffers graph names everything by string,
//! and loading it would mean interning every string again.
//!
//! Layout (version 4, little-endian, docs/formats.md): the magic, the key
//! (four `u64`), then per shard (256 node, 128 edge) its section's length
//! (`u64`, a multiple of 8), the section and its checksum (`u64`), then
//! the end marker. Every section, and every column in it, starts at a
//! multiple of 8 bytes from the start of the file, so a mapped column is
//! aligned for its values.

use std::fs::File;
use std::hash::Hasher;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;
use rustc_hash::FxHasher;

use super::bytes::{DecodeError, Writer};
use super::graph_store::CommitMeta;
pub use super::kinds::Mapped;
use super::kinds::{Stored, pad8, write_plain};
use svc_graph::graph::schema::{Bytes, F32, Flag, Key, MaybeSymbol, Reach, Rel, Stage, Symbol, Text, U64};
use svc_graph::graph::{Backing, EdgeShard, Graph, NodeShard};
use svc_graph::ids::{EDGE_SHARDS, NODE_SHARDS, NodeId, NodeSlot};

const MAGIC: &[u8; 8] = b"SVCSNAP\x04";
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

    /// Whether a snapshot keyed `self` holds the graph of a store keyed
    /// `want` whose last commit that wrote rows was at `content_commit_us`:
    /// the same key, or a snapshot of that commit with only commits that
    /// wrote no rows after it (a scan that changed nothing moves the key,
    /// not the graph; the symbols it added are appended to the store's table
    /// and no column of the snapshot names them).
    pub fn holds(&self, want: &SnapshotKey, content_commit_us: Option<u64>) -> bool {
        self == want
            || (content_commit_us == Some(self.commit_us)
                && self.generation == want.generation
                && self.scan_seq <= want.scan_seq
                && self.commit_us <= want.commit_us
                && self.symbols <= want.symbols)
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

/// The header buffer [`write_sections`] fills, through [`Writer`].
struct W(Vec<u8>);

impl W {
    fn u64s(&mut self, v: impl IntoIterator<Item = u64>) {
        Writer::new(&mut self.0).u64s(v);
    }
}

/// A section's checksum: four independent lanes of multiply-xor-rotate
/// over its 8-byte words (so a core runs them side by side and the pass
/// is bound by memory, not by one chain of multiplications), folded with
/// the tail and the length. Each step is a bijection of the lane for a
/// given word, so one changed word always changes its lane.
fn checksum(b: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut lanes = [
        0x243F_6A88_85A3_08D3u64,
        0x1319_8A2E_0370_7344,
        0xA409_3822_299F_31D0,
        0x082E_FA98_EC4E_6C89,
    ];
    let (blocks, tail) = b.as_chunks::<32>();
    for block in blocks {
        let (words, _) = block.as_chunks::<8>();
        for (lane, w) in lanes.iter_mut().zip(words) {
            *lane = (*lane ^ u64::from_le_bytes(*w)).wrapping_mul(K).rotate_left(29);
        }
    }
    let mut h = FxHasher::default();
    for lane in lanes {
        h.write_u64(lane);
    }
    h.write(tail);
    h.write_usize(b.len());
    h.finish()
}

/// The shards' snapshot sections, from the schema.
macro_rules! node_section {
    (
        identity { $($(#[$idoc:meta])* $ifield:ident / $icol:ident : $ikind:ident = $iname:literal,)* }
        fields { $($(#[$doc:meta])* $field:ident / $col:ident : $kind:ident = $name:literal,)* }
    ) => {
        /// A node shard's section: its row count, generation and arena
        /// length, the arena, a column for each field of
        /// the schema in order, the content hashes and the scan that last
        /// saw each row; each part padded to a multiple of 8 bytes.
        fn encode_nodes(s: &NodeShard) -> Vec<u8> {
            let n = s.len();
            let mut out = Vec::with_capacity(n * 140 + s.arena.len() + 64);
            Writer::new(&mut out).u64s([n as u64, u64::from(s.generation), s.arena.len() as u64]);
            out.extend_from_slice(&s.arena);
            pad8(&mut out);
            $($ikind::write_column(&mut out, &s.$icol, n);)*
            $($kind::write_column(&mut out, &s.$col, n);)*
            U64::write_column(&mut out, &s.content, n);
            write_plain(&mut out, &s.seen, n);
            out
        }

        /// A node shard from its snapshot section (as [`encode`] wrote it),
        /// its columns read where they lie in `m`, with its hash index rebuilt.
        pub fn decode_nodes(mut m: Mapped) -> Result<NodeShard, DecodeError> {
            let n = usize::try_from(m.u64("node count")?).map_err(|_| DecodeError("node count"))?;
            // A generation is 24 bits: a node id carries no more of it.
            let generation = u32::try_from(m.u64("generation")?)
                .ok()
                .filter(|&g| g <= NodeId::MAX_GENERATION)
                .ok_or(DecodeError("generation"))?;
            let a = usize::try_from(m.u64("node arena")?).map_err(|_| DecodeError("node arena"))?;
            let arena = m.col::<u8>(a, "node arena")?;
            $(let $icol = $ikind::map_column(&mut m, n, a, $iname)?;)*
            $(let $col = $kind::map_column(&mut m, n, a, $name)?;)*
            let mut s = NodeShard {
                generation,
                $($icol,)*
                $($col,)*
                content: m.col(n, "content")?,
                seen: m.col(n, "seen")?,
                arena,
                ..NodeShard::default()
            };
            m.end("trailing bytes in node shard")?;
            s.rebuild_index();
            Ok(s)
        }
    };
}

svc_graph::node_schema!(node_section);

/// The edge shards' snapshot sections, from the schema.
macro_rules! edge_section {
    ($($(#[$doc:meta])* $field:ident / $col:ident : $kind:ident = $name:literal,)*) => {
        /// An edge shard's section: its row count and arena length, the
        /// arena, the sources and targets, a column for each field of the
        /// schema in order, and the scan that last saw each row; each part
        /// padded to a multiple of 8 bytes.
        fn encode_edges(s: &EdgeShard) -> Vec<u8> {
            let n = s.len();
            let mut out = Vec::with_capacity(n * 64 + s.arena.len() + 64);
            Writer::new(&mut out).u64s([n as u64, s.arena.len() as u64]);
            out.extend_from_slice(&s.arena);
            pad8(&mut out);
            write_plain(&mut out, &s.src, n);
            write_plain(&mut out, &s.dst, n);
            $($kind::write_column(&mut out, &s.$col, n);)*
            write_plain(&mut out, &s.seen, n);
            out
        }

        /// An edge shard from its snapshot section (as [`encode`] wrote it),
        /// its columns read where they lie in `m`, every endpoint a row of
        /// `nodes` of that shard's generation, with its hash index rebuilt.
        pub fn decode_edges(mut m: Mapped, nodes: &[NodeShard]) -> Result<EdgeShard, DecodeError> {
            let n = usize::try_from(m.u64("edge count")?).map_err(|_| DecodeError("edge count"))?;
            let a = usize::try_from(m.u64("edge arena")?).map_err(|_| DecodeError("edge arena"))?;
            let arena = m.col::<u8>(a, "edge arena")?;
            let node_ok = |id: &NodeSlot| nodes.get(id.shard()).is_some_and(|s| (id.row() as usize) < s.len());
            let src = m.col::<NodeSlot>(n, "source")?;
            if !src.iter().all(node_ok) {
                return Err(DecodeError("source"));
            }
            let dst = m.col::<NodeSlot>(n, "target")?;
            if !dst.iter().all(node_ok) {
                return Err(DecodeError("target"));
            }
            $(let $col = $kind::map_column(&mut m, n, a, $name)?;)*
            let mut s = EdgeShard {
                src,
                dst,
                $($col,)*
                seen: m.col(n, "seen")?,
                arena,
                ..EdgeShard::default()
            };
            m.end("trailing bytes in edge shard")?;
            s.rebuild_index();
            Ok(s)
        }
    };
}

svc_graph::edge_schema!(edge_section);

/// Sections encoded at once while a snapshot is written: a bounded part
/// of the graph's size (the snapshot is about as large as the graph), so
/// writing one does not hold a second copy of the graph in memory.
const SECTIONS_AT_ONCE: usize = 8;

/// Writes the graph to `path` atomically (temporary file, fsync, rename).
pub fn write(path: &Path, graph: &Graph, key: SnapshotKey) -> Result<u64, SnapshotError> {
    let written = write_unsynced(path, graph, key)?;
    let bytes = written.bytes;
    written.finish()?;
    Ok(bytes)
}

/// A snapshot written to its temporary file, not yet synced nor in place.
pub struct Written {
    pending: crate::atomic::Pending,
    path: PathBuf,
    /// Bytes written.
    pub bytes: u64,
}

impl Written {
    /// Syncs the snapshot and renames it over its path ([`crate::atomic`]),
    /// so a reader sees the old snapshot or the new one, never a part.
    pub fn finish(self) -> Result<(), SnapshotError> {
        let Written { pending, path, .. } = self;
        pending.finish().map_err(|source| SnapshotError::Io { path, source })
    }
}

/// Writes the graph as the snapshot of `key` to a temporary file beside
/// `path`, a few shards' sections at a time (encoded on every core while
/// the ones before are written), and leaves the sync and the rename to
/// [`Written::finish`]: the caller holds the graph's read lock for the
/// writing and may let go of it for the sync. When a step fails the
/// temporary file is removed: a part written to a full disk would
/// otherwise hold its space (hundreds of megabytes at 1M nodes) while the
/// stores need it.
pub fn write_unsynced(path: &Path, graph: &Graph, key: SnapshotKey) -> Result<Written, SnapshotError> {
    let io = |source| SnapshotError::Io {
        path: path.to_owned(),
        source,
    };
    let mut pending = crate::atomic::begin(path).map_err(io)?;
    let bytes = write_sections(pending.file(), graph, key).map_err(io)?;
    Ok(Written {
        pending,
        path: path.to_owned(),
        bytes,
    })
}

/// The snapshot's bytes into `file`, flushed; the bytes written.
fn write_sections(file: &mut File, graph: &Graph, key: SnapshotKey) -> std::io::Result<u64> {
    let mut f = std::io::BufWriter::with_capacity(1 << 20, file);
    let mut header = W(Vec::with_capacity(48));
    header.0.extend_from_slice(MAGIC);
    header.u64s([key.generation, key.scan_seq, key.commit_us, key.symbols]);
    f.write_all(&header.0)?;
    let mut total = header.0.len() as u64;
    let mut put = |sections: Vec<Vec<u8>>| -> std::io::Result<()> {
        for section in sections {
            f.write_all(&(section.len() as u64).to_le_bytes())?;
            f.write_all(&section)?;
            f.write_all(&checksum(&section).to_le_bytes())?;
            total += section.len() as u64 + 16;
        }
        Ok(())
    };
    let nodes = graph.node_shards().chunks(SECTIONS_AT_ONCE).map(Part::Nodes);
    let edges = graph.edge_shards().chunks(SECTIONS_AT_ONCE).map(Part::Edges);
    let mut ready: Vec<Vec<u8>> = Vec::new();
    for part in nodes.chain(edges) {
        let (written, next) = rayon::join(|| put(std::mem::take(&mut ready)), || part.encode());
        written?;
        ready = next;
    }
    put(ready)?;
    f.write_all(END)?;
    f.flush()?;
    Ok(total + 8)
}

/// A few shards, encoded together.
enum Part<'g> {
    Nodes(&'g [NodeShard]),
    Edges(&'g [EdgeShard]),
}

impl Part<'_> {
    fn encode(&self) -> Vec<Vec<u8>> {
        match self {
            Part::Nodes(s) => s.par_iter().map(encode_nodes).collect(),
            Part::Edges(s) => s.par_iter().map(encode_edges).collect(),
        }
    }
}

/// Node and edge shards read from a snapshot.
pub struct Shards {
    pub nodes: Vec<NodeShard>,
    pub edges: Vec<EdgeShard>,
}

/// A section of the snapshot file, mapped read-only.
struct Section(memmap2::Mmap);

impl Backing for Section {
    fn bytes(&self) -> &[u8] {
        &self.0
    }
}

/// Maps `len` bytes of `file` from `off`.
fn map(file: &File, off: u64, len: usize) -> std::io::Result<memmap2::Mmap> {
    // SAFETY: a mapping is undefined behaviour to read if another process
    // changes or truncates the file under it. The daemon maps only
    // `graph.snap` in its own data directory, a file it wrote itself
    // through `crate::atomic` (a temporary file, synced, renamed over the
    // old one) and never writes in place or truncates: a new snapshot is a
    // new file (inode), so a mapping keeps reading the file it was made
    // from, unchanged, for as long as it lives. Nothing else may write the
    // data directory while the daemon runs (it holds the stores' locks).
    #[allow(unsafe_code)]
    unsafe {
        memmap2::MmapOptions::new().offset(off).len(len).map(file)
    }
}

/// Whether the snapshot at `path` was written for `key` (its header only;
/// the sections are checked when it is read).
pub fn matches(path: &Path, key: SnapshotKey) -> bool {
    key_at(path) == Some(key)
}

/// The key in the header of the snapshot at `path`; `None` when there is
/// none of this version (the sections are not read).
pub fn key_at(path: &Path) -> Option<SnapshotKey> {
    let file = File::open(path).ok()?;
    let mut word = |at: u64, _| -> Result<[u8; 8], ()> {
        let mut b = [0u8; 8];
        file.read_exact_at(&mut b, at).map_err(drop)?;
        Ok(b)
    };
    key_of(&mut word).ok().flatten()
}

/// The key in a snapshot's header, read with `word` (8 bytes at an
/// offset); `None` when the magic is not this version's.
fn key_of<E>(word: &mut impl FnMut(u64, &'static str) -> Result<[u8; 8], E>) -> Result<Option<SnapshotKey>, E> {
    if &word(0, "magic")? != MAGIC {
        return Ok(None);
    }
    let mut header = [0u64; 4];
    for (i, h) in header.iter_mut().enumerate() {
        *h = u64::from_le_bytes(word(8 + 8 * i as u64, "header")?);
    }
    Ok(Some(SnapshotKey {
        generation: header[0],
        scan_seq: header[1],
        commit_us: header[2],
        symbols: header[3],
    }))
}

/// Reads a snapshot that holds the graph of a store keyed `want`
/// ([`SnapshotKey::holds`]), each shard's columns read where they lie in
/// its mapped section.
pub fn read(path: &Path, want: SnapshotKey, content_commit_us: Option<u64>) -> Result<Shards, SnapshotError> {
    let io = |source| SnapshotError::Io {
        path: path.to_owned(),
        source,
    };
    let bad = |cause| SnapshotError::Malformed {
        path: path.to_owned(),
        cause,
    };
    let file = File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    let mut word = |at: u64, what| -> Result<[u8; 8], SnapshotError> {
        let mut b = [0u8; 8];
        if at.checked_add(8).is_none_or(|end| end > size) {
            return Err(bad(DecodeError(what)));
        }
        file.read_exact_at(&mut b, at).map_err(io)?;
        Ok(b)
    };
    let Some(found) = key_of(&mut word)? else {
        return Err(bad(DecodeError("not an svc snapshot of this version")));
    };
    if !found.holds(&want, content_commit_us) {
        return Err(SnapshotError::Stale {
            path: path.to_owned(),
            found,
            want,
        });
    }
    // Each section: where its body starts, its length, its checksum.
    let mut table = Vec::with_capacity(NODE_SHARDS + EDGE_SHARDS);
    let mut at = 40u64;
    for _ in 0..NODE_SHARDS + EDGE_SHARDS {
        let len = u64::from_le_bytes(word(at, "section")?);
        let body = at + 8;
        let sum_at = body
            .checked_add(len)
            .filter(|_| len.is_multiple_of(8))
            .ok_or(bad(DecodeError("section")))?;
        let sum = u64::from_le_bytes(word(sum_at, "section checksum")?);
        let len = usize::try_from(len).map_err(|_| bad(DecodeError("section")))?;
        table.push((body, len, sum));
        at = sum_at + 8;
    }
    if &word(at, "end marker")? != END || at + 8 != size {
        return Err(bad(DecodeError("end marker")));
    }
    // An empty section maps nothing (a mapping of no bytes is refused).
    let sections: Vec<Arc<dyn Backing>> = table
        .par_iter()
        .map(|&(body, len, sum)| {
            let section: Arc<dyn Backing> = if len == 0 {
                Arc::new(Empty)
            } else {
                let mapped = map(&file, body, len).map_err(io)?;
                // Read ahead the whole section at once: the checksum below
                // walks every byte, and a snapshot the page cache lost (a
                // first start, memory pressure) is read from disk in long
                // runs rather than a fault at a time. Only advice: the
                // kernel may decline it, and nothing depends on it.
                let _ = mapped.advise(memmap2::Advice::WillNeed);
                Arc::new(Section(mapped))
            };
            if checksum(section.bytes()) != sum {
                return Err(bad(DecodeError("checksum mismatch")));
            }
            Ok(section)
        })
        .collect::<Result<_, _>>()?;
    let mapped = |s: &Arc<dyn Backing>| Mapped::new(s.clone(), 0, s.bytes().len());
    let nodes: Vec<NodeShard> = sections[..NODE_SHARDS]
        .par_iter()
        .map(|s| decode_nodes(mapped(s)))
        .collect::<Result<_, _>>()
        .map_err(bad)?;
    let edges: Vec<EdgeShard> = sections[NODE_SHARDS..]
        .par_iter()
        .map(|s| decode_edges(mapped(s), &nodes))
        .collect::<Result<_, _>>()
        .map_err(bad)?;
    Ok(Shards { nodes, edges })
}

/// The bytes of an empty section.
struct Empty;

impl Backing for Empty {
    fn bytes(&self) -> &[u8] {
        &[]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use svc_graph::graph::shard::HeldProps;
    use svc_graph::graph::{NodeRow, Phase, Reachability};
    use svc_graph::ids::Sym;
    use svc_graph::relation::Relation;

    fn mapped(b: &[u8]) -> Mapped {
        Mapped::copied(b)
    }

    /// The sections' layouts, spelled out byte by byte: the schema's order
    /// is the stored order, each part padded to 8 bytes, and a section
    /// reads back as it was, its columns where they lie.
    /// A snapshot holds a store's graph under the same key, or when only
    /// commits that wrote no rows came after the commit it was taken of.
    #[test]
    fn a_snapshot_holds_the_graph_until_a_commit_writes_rows() {
        let at = |generation, scan_seq, commit_us, symbols| SnapshotKey {
            generation,
            scan_seq,
            commit_us,
            symbols,
        };
        let snap = at(4, 10, 1_000, 50);
        assert!(snap.holds(&snap, None));
        // Two scans that changed nothing (one added symbols): still its graph.
        assert!(snap.holds(&at(4, 12, 3_000, 52), Some(1_000)));
        // A later commit wrote rows, or the snapshot is of another commit.
        assert!(!snap.holds(&at(4, 12, 3_000, 52), Some(2_000)));
        assert!(!snap.holds(&at(4, 12, 3_000, 52), None));
        // Another generation, fewer symbols, or a store behind the snapshot.
        assert!(!snap.holds(&at(5, 12, 3_000, 52), Some(1_000)));
        assert!(!snap.holds(&at(4, 12, 3_000, 49), Some(1_000)));
        assert!(!snap.holds(&at(4, 9, 3_000, 50), Some(1_000)));
    }

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
        let hash = svc_graph::graph::batch::key_hash(row.key, row.id.as_bytes());
        nodes.load(hash, &row);
        let pad = |mut v: Vec<u8>| {
            v.resize(v.len().next_multiple_of(8), 0);
            v
        };
        let u32s = |v: &[u32]| pad(v.iter().flat_map(|x| x.to_le_bytes()).collect());
        let u64s = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let want = [
            u64s(&[1, 0, 8]),
            // Each blob behind its length.
            b"\x01i\x01w\x01\xaa\x01\xbb".to_vec(),
            u32s(&[1, 2, 3, 4, 5]),
            u32s(&[0]),
            u32s(&[6]),
            u32s(&[7]),
            u32s(&[1.5f32.to_bits()]),
            u64s(&[8, 9, 10, 1]),
            u32s(&[2]),
            u32s(&[2.0f32.to_bits()]),
            pad(vec![2]),
            pad(vec![3]),
            u32s(&[11]),
            u32s(&[4]),
            u32s(&[6]),
            u64s(&[nodes.content[0]]),
            u32s(&[0]),
        ]
        .concat();
        assert_eq!(encode_nodes(&nodes), want);
        let back = decode_nodes(mapped(&want)).unwrap();
        assert!(back.props.is_shared() && back.arena.is_shared());
        assert_eq!(back.row(0), row);
        assert_eq!(back.find(hash, &row.key, b"i"), Some(0));

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
            u64s(&[1, 2]),
            pad(vec![1, 0xcc]),
            u32s(&[NodeSlot::of(end).raw()]),
            u32s(&[NodeSlot::of(end).raw()]),
            pad(vec![rel as u8]),
            u64s(&[1, 5, 6]),
            u32s(&[0]),
            u32s(&[7]),
        ]
        .concat();
        assert_eq!(encode_edges(&edges), want);
        let back = decode_edges(mapped(&want), std::slice::from_ref(&nodes)).unwrap();
        assert_eq!(back.fields(0).to_version(String::new(), String::new()).props, [0xcc]);
        assert_eq!(back.find(end, end, rel), Some(0));
        assert!(back.src.is_shared());

        // A value no column holds, a blob past the arena and an endpoint
        // past its shard are each refused.
        let mut bad = encode_nodes(&nodes);
        bad[48..52].copy_from_slice(&0u32.to_le_bytes());
        assert_eq!(decode_nodes(mapped(&bad)).err(), Some(DecodeError("key")));
        let mut bad = encode_nodes(&nodes);
        bad[56..60].copy_from_slice(&9u32.to_le_bytes());
        assert_eq!(decode_nodes(mapped(&bad)).err(), Some(DecodeError("id")));
        let mut bad = want.clone();
        bad[24..28].copy_from_slice(&NodeSlot::new(0, 1).raw().to_le_bytes());
        assert_eq!(
            decode_edges(mapped(&bad), std::slice::from_ref(&nodes)).err(),
            Some(DecodeError("source"))
        );
        let mut bad = want;
        bad[40] = 200;
        assert_eq!(
            decode_edges(mapped(&bad), std::slice::from_ref(&nodes)).err(),
            Some(DecodeError("relation"))
        );
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
        assert_eq!(
            decode_nodes(mapped(&section(max))).unwrap().generation,
            NodeId::MAX_GENERATION
        );
        assert_eq!(
            decode_nodes(mapped(&section(max + 1))).err(),
            Some(DecodeError("generation"))
        );
    }

    /// One changed word, anywhere, changes the checksum.
    #[test]
    fn the_checksum_sees_each_changed_word() {
        let b: Vec<u8> = (0..200u32).flat_map(|i| (i * 7919).to_le_bytes()).collect();
        let sum = checksum(&b);
        for i in 0..b.len() {
            let mut c = b.clone();
            c[i] ^= 0x10;
            assert_ne!(checksum(&c), sum, "byte {i}");
        }
        assert_ne!(checksum(&b[..792]), sum);
    }

    proptest! {
        #[test]
        fn arbitrary_sections_never_panic_the_decoders(count in 0u64..4, tail in proptest::collection::vec(any::<u8>(), 0..400)) {
            let b = [&count.to_le_bytes()[..], &tail].concat();
            let nodes: Vec<NodeShard> = decode_nodes(mapped(&b)).into_iter().collect();
            let _ = decode_edges(mapped(&b), &nodes);
            let _ = decode_edges(mapped(&tail), &[]);
        }
    }
}

//! Batches of interned nodes and edges: the engine's ingest input.
//!
//! Producers (the plugin host's decoders, the mock estate, tests) intern the
//! low-cardinality strings and write each node's id, tags and properties
//! into one byte buffer per batch, so a batch of thousands of nodes is two
//! allocations. The graph copies rows from batches into its shards.

use std::hash::Hasher;

use hashbrown::HashTable;
use rustc_hash::FxHasher;

use crate::ids::Sym;
use crate::props::{PropWriter, Props, Tags, write_tag};
use crate::relation::Relation;

use super::mem::{Prefetch, content_hash, fmix64};
pub use super::mem::{Span, push_bytes};

/// The identity of a node: the interned CRN segments and the physical id.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct NodeKeyRef<'a> {
    pub provider: Sym,
    pub region: Sym,
    pub service: Sym,
    pub kind: Sym,
    pub account: Sym,
    pub id: &'a str,
}

impl NodeKeyRef<'_> {
    pub fn syms(&self) -> [Sym; 5] {
        [self.provider, self.region, self.service, self.kind, self.account]
    }

    /// The key's hash; its low byte picks the node shard.
    pub fn hash(&self) -> u64 {
        key_hash(self.syms(), self.id.as_bytes())
    }
}

// Inlined into the plugin decoder's steps, as they run for every node and
// edge end (`svc_ingest::decode::json`, the scanner's `entries`).
#[inline(always)]
pub fn key_hash(syms: [Sym; 5], id: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    for s in syms {
        h.write_u32(s.to_raw());
    }
    h.write(id);
    fmix64(h.finish())
}

/// The discovered fields of one node.
#[derive(Copy, Clone, Debug)]
pub struct NodeInput<'a> {
    pub key: NodeKeyRef<'a>,
    /// `<service>:<kind>`.
    pub ty: Sym,
    pub state: Sym,
    pub cost_usd_mo: f32,
    /// Unix seconds.
    pub creation_ts: u64,
}

#[derive(Copy, Clone, Debug)]
pub struct BatchNode {
    pub hash: u64,
    pub syms: [Sym; 5],
    pub ty: Sym,
    pub state: Sym,
    pub cost: f32,
    pub creation_ts: u64,
    pub id: Span,
    pub tags: Span,
    pub props: Span,
    /// The row's content hash ([`content_hash`]), taken as it is written,
    /// while its bytes are in the writer's cache: a later scan finds most
    /// rows unchanged by comparing it, without reading their bytes again.
    pub content: u64,
}

impl BatchNode {
    #[inline(always)]
    fn content(&self, buf: &[u8]) -> u64 {
        content_hash(
            self.ty,
            self.state,
            self.cost,
            self.creation_ts,
            self.tags.get(buf),
            self.props.get(buf),
        )
    }
}

/// A node a source sent that the graph already holds as it is: found
/// by its key and content fingerprint before it was decoded
/// ([`super::NodeShard::unchanged_row`]), so it is carried as its place only.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FoundNode {
    pub shard: u16,
    pub row: u32,
    /// The CRN's provider segment (a source's nodes are counted by it).
    pub provider: Sym,
}

/// A batch of nodes, usually a few thousand.
#[derive(Default)]
pub struct NodeBatch {
    pub rows: Vec<BatchNode>,
    pub buf: Vec<u8>,
    /// Nodes found unchanged in the graph, not decoded into `rows`.
    pub found: Vec<FoundNode>,
}

impl NodeBatch {
    /// Starts loading row `i` ([`Prefetch::Row`]), then, once that is
    /// in, its id, tags and properties ([`Prefetch::Lists`]): all of
    /// them when the row is to be copied (`whole`), else where each starts
    /// (an unchanged row compares its id and content hash only).
    pub fn prefetch(&self, i: usize, stage: Prefetch, whole: bool) {
        use super::mem::{prefetch, prefetch_bytes};
        let Some(row) = self.rows.get(i) else {
            return;
        };
        match stage {
            Prefetch::Row => prefetch(row),
            Prefetch::Lists => {
                for span in [row.id, row.tags, row.props] {
                    prefetch_bytes(&self.buf, span, if whole { usize::MAX } else { 1 });
                }
            }
        }
    }

    pub fn with_capacity(nodes: usize) -> NodeBatch {
        NodeBatch::with_capacity_bytes(nodes, nodes * 160)
    }

    /// Room for `nodes` nodes whose ids, tags and properties take `bytes`.
    pub fn with_capacity_bytes(nodes: usize, bytes: usize) -> NodeBatch {
        NodeBatch {
            rows: Vec::with_capacity(nodes),
            buf: Vec::with_capacity(bytes),
            found: Vec::new(),
        }
    }

    /// Adds a node; `props` writes its properties.
    pub fn push(&mut self, node: NodeInput<'_>, tags: &[(Sym, Sym)], props: impl FnOnce(&mut PropWriter<'_>)) {
        self.push_hashed(node, tags, None, props);
    }

    /// Adds a node decoded from what a source sent, whose
    /// [`super::source_fingerprint`] is `fingerprint`: its content hash.
    pub fn push_sent(
        &mut self,
        node: NodeInput<'_>,
        tags: &[(Sym, Sym)],
        fingerprint: u64,
        props: impl FnOnce(&mut PropWriter<'_>),
    ) {
        self.push_hashed(node, tags, Some(fingerprint), props);
    }

    /// Adds a node with content hash `content`, or the hash of its fields.
    fn push_hashed(
        &mut self,
        node: NodeInput<'_>,
        tags: &[(Sym, Sym)],
        content: Option<u64>,
        props: impl FnOnce(&mut PropWriter<'_>),
    ) {
        let id = push_bytes(&mut self.buf, node.key.id.as_bytes());
        let tags_off = self.buf.len() as u32;
        for (k, v) in tags {
            write_tag(&mut self.buf, *k, *v);
        }
        let tags = Span {
            off: tags_off,
            len: self.buf.len() as u32 - tags_off,
        };
        let props_off = self.buf.len() as u32;
        props(&mut PropWriter::new(&mut self.buf));
        let props = Span {
            off: props_off,
            len: self.buf.len() as u32 - props_off,
        };
        let mut row = BatchNode {
            hash: node.key.hash(),
            syms: node.key.syms(),
            ty: node.ty,
            state: node.state,
            cost: if node.cost_usd_mo.is_finite() {
                node.cost_usd_mo.max(0.0)
            } else {
                0.0
            },
            creation_ts: node.creation_ts,
            id,
            tags,
            props,
            content: 0,
        };
        row.content = content.unwrap_or_else(|| row.content(&self.buf));
        self.rows.push(row);
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// No row, and no node found unchanged.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty() && self.found.is_empty()
    }

    /// Rewrites the batch in place: `f` sees each node's key hash (as
    /// [`NodeKeyRef::hash`]), CRN segments and physical id, and answers
    /// whether to keep it and with which state.
    pub fn adjust(&mut self, mut f: impl FnMut(u64, [Sym; 5], &str) -> Adjust) {
        let buf = &self.buf;
        self.rows.retain_mut(|r| match f(r.hash, r.syms, r.id.get_str(buf)) {
            Adjust::Keep => true,
            Adjust::Drop => false,
            Adjust::State(s) => {
                r.state = s;
                r.content = r.content(buf);
                true
            }
        });
    }

    /// Bytes held by the batch buffer.
    pub fn buffer_len(&self) -> usize {
        self.buf.len()
    }

    /// Rows and buffer bytes the batch holds without growing.
    pub fn capacity(&self) -> (usize, usize) {
        (self.rows.capacity(), self.buf.capacity())
    }

    /// Empties the batch, keeping its memory.
    pub fn clear(&mut self) {
        self.rows.clear();
        self.buf.clear();
        self.found.clear();
    }

    /// Nodes the batch stands for: its rows and the nodes found unchanged.
    pub fn nodes(&self) -> usize {
        self.rows.len() + self.found.len()
    }

    /// The nodes as written, in order.
    pub fn iter(&self) -> impl Iterator<Item = BatchNodeRef<'_>> {
        self.rows.iter().map(|r| BatchNodeRef {
            syms: r.syms,
            id: r.id.get_str(&self.buf),
            ty: r.ty,
            state: r.state,
            cost_usd_mo: r.cost,
            creation_ts: r.creation_ts,
            tags: Tags::new(r.tags.get(&self.buf)),
            props: Props::new(r.props.get(&self.buf)),
        })
    }
}

/// What [`NodeBatch::adjust`] does with one node.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Adjust {
    Keep,
    Drop,
    State(Sym),
}

/// One node of a [`NodeBatch`], read back.
pub struct BatchNodeRef<'a> {
    /// Provider, region, service, kind and account.
    pub syms: [Sym; 5],
    pub id: &'a str,
    pub ty: Sym,
    pub state: Sym,
    pub cost_usd_mo: f32,
    pub creation_ts: u64,
    pub tags: Tags<'a>,
    pub props: Props<'a>,
}

/// One edge of an [`EdgeBatch`], read back; endpoints are the CRN segments
/// (provider, region, service, kind, account) and the id.
pub struct BatchEdgeRef<'a> {
    pub src: ([Sym; 5], &'a str),
    pub dst: ([Sym; 5], &'a str),
    pub relation: Relation,
    pub inferred: bool,
    pub props: Props<'a>,
}

/// One edge of an [`EdgeBatch`], read back with its endpoints as indexes
/// into [`EdgeBatch::endpoint_keys`].
pub struct IndexedEdgeRef<'a> {
    pub src: usize,
    pub dst: usize,
    pub relation: Relation,
    pub inferred: bool,
    pub props: Props<'a>,
}

#[derive(Copy, Clone, Debug)]
pub struct BatchKey {
    pub hash: u64,
    pub syms: [Sym; 5],
    pub id: Span,
}

/// An edge of a batch: its endpoints are indexes into the batch's keys.
#[derive(Copy, Clone, Debug)]
pub struct BatchEdge {
    pub src: u32,
    pub dst: u32,
    pub rel: Relation,
    pub inferred: bool,
    pub props: Span,
}

/// A batch of edges between nodes named by key. Endpoints are resolved when
/// the batch is ingested, after every node of the scan has arrived, so an
/// edge may name a node from a later batch or another provider.
///
/// Each distinct endpoint is kept once: the edges of a batch mostly join
/// the resources of a few applications, so a batch names each node about
/// four times, and resolving (and storing) each key once spares most of the
/// lookups in the node shards.
pub struct EdgeBatch {
    pub rows: Vec<BatchEdge>,
    /// The distinct endpoints, in order of first mention.
    pub keys: Vec<BatchKey>,
    pub buf: Vec<u8>,
    /// `keys` by hash while the batch is written (empty once sealed).
    index: HashTable<u32>,
    /// Properties written so far, by their bytes (empty once sealed).
    props_index: HashTable<Span>,
    /// Tells this batch from every other of the process (see
    /// [`EdgeBatch::serial`]).
    serial: u64,
}

impl Default for EdgeBatch {
    fn default() -> EdgeBatch {
        EdgeBatch::with_capacity_bytes(0, 0)
    }
}

/// The properties of an edge of one batch, for more edges of that batch
/// ([`EdgeBatch::push_sharing`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SharedProps {
    batch: u64,
    span: Span,
}

/// The next [`EdgeBatch::serial`].
static SERIALS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Properties longer than this are not looked up among earlier edges'.
const MAX_SHARED_PROPS: usize = 256;

fn bytes_hash(bytes: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(bytes);
    fmix64(h.finish())
}

impl EdgeBatch {
    /// Starts loading endpoint `i` ([`Prefetch::Row`]), then, once
    /// that is in, its id ([`Prefetch::Lists`]).
    pub fn prefetch_key(&self, i: usize, stage: Prefetch) {
        use super::mem::prefetch;
        let Some(key) = self.keys.get(i) else {
            return;
        };
        match stage {
            Prefetch::Row => prefetch(key),
            Prefetch::Lists => super::mem::prefetch_bytes(&self.buf, key.id, super::mem::ID_PREFETCH),
        }
    }

    /// Starts loading row `i` ([`Prefetch::Row`]), then, once that is
    /// in, its endpoints' entries in `ends` and its properties
    /// ([`Prefetch::Lists`]).
    pub fn prefetch<T>(&self, i: usize, stage: Prefetch, ends: &[T]) {
        use super::mem::prefetch;
        let Some(row) = self.rows.get(i) else {
            return;
        };
        match stage {
            Prefetch::Row => prefetch(row),
            Prefetch::Lists => {
                ends.get(row.src as usize).map(prefetch);
                ends.get(row.dst as usize).map(prefetch);
                self.buf.get(row.props.off as usize).map(prefetch);
            }
        }
    }

    pub fn with_capacity(edges: usize) -> EdgeBatch {
        EdgeBatch::with_capacity_bytes(edges, edges * 48)
    }

    /// Room for `edges` edges whose endpoint ids and properties take `bytes`
    /// (and for half as many endpoints, indexed without growing).
    pub fn with_capacity_bytes(edges: usize, bytes: usize) -> EdgeBatch {
        EdgeBatch {
            rows: Vec::with_capacity(edges),
            keys: Vec::with_capacity(edges / 2),
            buf: Vec::with_capacity(bytes),
            index: HashTable::with_capacity(edges / 2),
            props_index: HashTable::new(),
            serial: SERIALS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// The index of endpoint `k` in `keys`, added if new.
    #[inline(always)]
    fn key(&mut self, k: NodeKeyRef<'_>) -> u32 {
        let (keys, buf) = (&mut self.keys, &mut self.buf);
        if self.index.len() < keys.len() {
            // Sealed, then written to again: index what is there.
            self.index.clear();
            for (i, key) in keys.iter().enumerate() {
                self.index.insert_unique(key.hash, i as u32, |&j| keys[j as usize].hash);
            }
        }
        let hash = k.hash();
        let syms = k.syms();
        let id = k.id.as_bytes();
        let entry = self.index.entry(
            hash,
            |&j| {
                let key = &keys[j as usize];
                key.hash == hash && key.syms == syms && key.id.get(buf) == id
            },
            |&j| keys[j as usize].hash,
        );
        match entry {
            hashbrown::hash_table::Entry::Occupied(e) => *e.get(),
            hashbrown::hash_table::Entry::Vacant(v) => {
                let at = keys.len() as u32;
                keys.push(BatchKey {
                    hash,
                    syms,
                    id: push_bytes(buf, id),
                });
                v.insert(at);
                at
            }
        }
    }

    /// Writes an edge's properties; the same bytes as an earlier edge's
    /// (most edges carry only their relation's name) are kept once.
    fn props(&mut self, write: impl FnOnce(&mut PropWriter<'_>)) -> Span {
        let off = self.buf.len();
        write(&mut PropWriter::new(&mut self.buf));
        let span = Span {
            off: off as u32,
            len: (self.buf.len() - off) as u32,
        };
        let Some(bytes) = self.buf.get(off..) else {
            return span;
        };
        if bytes.is_empty() || bytes.len() > MAX_SHARED_PROPS {
            return span;
        }
        let buf = &self.buf;
        let hash = bytes_hash(bytes);
        let entry = self
            .props_index
            .entry(hash, |s| s.get(buf) == bytes, |s| bytes_hash(s.get(buf)));
        match entry {
            hashbrown::hash_table::Entry::Occupied(e) => {
                let earlier = *e.get();
                self.buf.truncate(off);
                earlier
            }
            hashbrown::hash_table::Entry::Vacant(v) => {
                v.insert(span);
                span
            }
        }
    }

    /// Drops the indexes of the batch's keys and properties, kept only
    /// while it is written: a batch on its way to the graph needs neither.
    pub fn seal(&mut self) {
        self.index = HashTable::new();
        self.props_index = HashTable::new();
    }

    /// A number no other batch of the process has: a writer that keeps
    /// its own index of a batch's endpoints (the decoder, by CRN text)
    /// knows from it when it is handed another batch.
    pub fn serial(&self) -> u64 {
        self.serial
    }

    /// The index of endpoint `k` among the batch's endpoints, added if new,
    /// for [`EdgeBatch::push_between`].
    pub fn endpoint(&mut self, k: NodeKeyRef<'_>) -> u32 {
        self.key(k)
    }

    /// Adds an edge between endpoints `src` and `dst` of this batch (from
    /// [`EdgeBatch::endpoint`]), returning its properties for
    /// [`EdgeBatch::push_sharing`]; `None`, and nothing added, when either
    /// is not one.
    pub fn push_between(
        &mut self,
        src: u32,
        dst: u32,
        rel: Relation,
        props: impl FnOnce(&mut PropWriter<'_>),
    ) -> Option<SharedProps> {
        if !self.are_endpoints(src, dst) {
            return None;
        }
        let shared = SharedProps {
            batch: self.serial,
            span: self.props(props),
        };
        self.push_sharing(src, dst, rel, shared).then_some(shared)
    }

    /// [`EdgeBatch::push_between`] with the properties of an earlier edge
    /// of this batch, not written again; `false`, and nothing added, when
    /// `props` is another batch's or an endpoint is not one.
    pub fn push_sharing(&mut self, src: u32, dst: u32, rel: Relation, props: SharedProps) -> bool {
        if props.batch != self.serial || !self.are_endpoints(src, dst) {
            return false;
        }
        self.rows.push(BatchEdge {
            src,
            dst,
            rel,
            inferred: false,
            props: props.span,
        });
        true
    }

    fn are_endpoints(&self, src: u32, dst: u32) -> bool {
        let endpoints = self.keys.len();
        (src as usize) < endpoints && (dst as usize) < endpoints
    }

    /// Adds an edge from `src` to `dst`; `props` writes its properties (for
    /// example the plugin's original relation string under `relation`).
    pub fn push(
        &mut self,
        src: NodeKeyRef<'_>,
        dst: NodeKeyRef<'_>,
        rel: Relation,
        props: impl FnOnce(&mut PropWriter<'_>),
    ) {
        self.push_edge(src, dst, rel, false, props);
    }

    /// Adds an edge that no provider reported but the engine inferred.
    pub fn push_edge(
        &mut self,
        src: NodeKeyRef<'_>,
        dst: NodeKeyRef<'_>,
        rel: Relation,
        inferred: bool,
        props: impl FnOnce(&mut PropWriter<'_>),
    ) {
        let src = self.key(src);
        let dst = self.key(dst);
        let props = self.props(props);
        self.rows.push(BatchEdge {
            src,
            dst,
            rel,
            inferred,
            props,
        });
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Distinct endpoints the edges name.
    pub fn endpoints(&self) -> usize {
        self.keys.len()
    }

    /// Bytes held by the batch buffer.
    pub fn buffer_len(&self) -> usize {
        self.buf.len()
    }

    /// The distinct endpoints (CRN segments and id), in order of first mention.
    pub fn endpoint_keys(&self) -> impl Iterator<Item = ([Sym; 5], &str)> {
        self.keys.iter().map(|k| (k.syms, k.id.get_str(&self.buf)))
    }

    /// The edges as written, in order, each naming its endpoints by their
    /// indexes in [`EdgeBatch::endpoint_keys`].
    pub fn iter_indexed(&self) -> impl Iterator<Item = IndexedEdgeRef<'_>> {
        self.rows.iter().map(|r| IndexedEdgeRef {
            src: r.src as usize,
            dst: r.dst as usize,
            relation: r.rel,
            inferred: r.inferred,
            props: Props::new(r.props.get(&self.buf)),
        })
    }

    /// The edges as written, in order.
    pub fn iter(&self) -> impl Iterator<Item = BatchEdgeRef<'_>> {
        let key = |k: u32| {
            let key = &self.keys[k as usize];
            (key.syms, key.id.get_str(&self.buf))
        };
        self.rows.iter().map(move |r| BatchEdgeRef {
            src: key(r.src),
            dst: key(r.dst),
            relation: r.rel,
            inferred: r.inferred,
            props: Props::new(r.props.get(&self.buf)),
        })
    }
}

impl<'a> NodeKeyRef<'a> {
    /// Interns the segments of a parsed CRN.
    pub fn intern(interner: &crate::intern::Interner, crn: &'a crate::crn::Crn) -> NodeKeyRef<'a> {
        NodeKeyRef {
            provider: interner.intern(&crn.provider),
            region: interner.intern(&crn.region),
            service: interner.intern(&crn.service),
            kind: interner.intern(&crn.kind),
            account: interner.intern(&crn.account),
            id: &crn.id,
        }
    }
}

//! Decoding of provider plugin messages (`svc.provider.v1.ScanResponse`)
//! into the engine's interned batches: the work of one RPC worker.
//!
//! A node's CRN may be in plugin or graph form and becomes the graph form;
//! its JSON properties keep their types; `state`, `tags` and the creation
//! time (`creation_timestamp` in Unix seconds, or `created_at` in RFC 3339)
//! fill the columns of the same name, and every property except `tags` is
//! kept. Edge relation strings map onto the seven relationships (reversed
//! where the string says so), with the original kept as property
//! `relation`. A malformed node or edge is rejected with a reason and
//! counted; it never stops the rest.

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;

use rustc_hash::FxBuildHasher;
use serde_json::Value;
use svc_engine::crn::{CrnError, CrnRef, MAX_CRN_LEN};
use svc_engine::graph::{
    EdgeBatch, FoundNode, Graph, NodeBatch, NodeInput, NodeKeyRef, SharedProps, source_fingerprint,
};
use svc_engine::props::PropWriter;
use svc_engine::relation::{MappedRelation, map_relation};
use svc_engine::{Interner, Sym};
use svc_proto::provider::v1 as pb;

mod crn;
pub(crate) mod json;
pub use json::plain_run;
pub mod wire;

use json::{Entry, Tok};
pub use wire::{EdgeView, NodeView, WireError};

/// Largest JSON properties document accepted for one node, in bytes.
pub const MAX_PROPERTIES_BYTES: usize = 256 * 1024;
/// Rejection reasons kept verbatim per decoder (the rest are only counted).
const KEPT_REASONS: usize = 20;
/// Strings a decoder remembers the symbols of before it starts over.
const LOCAL_SYMBOLS: usize = 1 << 16;

/// What a decoder has seen.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DecodeStats {
    pub nodes: u64,
    pub edges: u64,
    pub rejected_nodes: u64,
    pub rejected_edges: u64,
    /// Relation strings that mapped to nothing known (stored as `Uses`), with counts.
    pub unknown_relations: BTreeMap<String, u64>,
    /// The first rejection reasons, for the log and the scan report.
    pub reasons: Vec<String>,
    /// Decode workers whose stats these are.
    pub decoders: u64,
    /// Nodes (of `nodes`) the graph held as they were sent, found by their
    /// fingerprint and not decoded ([`Decoder::wire_in`]).
    pub unchanged: u64,
}

impl DecodeStats {
    /// Adds what another decoder of the same scan saw.
    pub fn merge(&mut self, other: DecodeStats) {
        self.nodes += other.nodes;
        self.edges += other.edges;
        self.rejected_nodes += other.rejected_nodes;
        self.rejected_edges += other.rejected_edges;
        self.decoders += other.decoders;
        self.unchanged += other.unchanged;
        for (k, v) in other.unknown_relations {
            *self.unknown_relations.entry(k).or_default() += v;
        }
        let room = KEPT_REASONS.saturating_sub(self.reasons.len());
        self.reasons.extend(other.reasons.into_iter().take(room));
    }
}

/// The symbols a decoder has already looked up: most strings of a scan
/// (CRN segments, types, states, property and tag keys) repeat, and a
/// worker-local table spares the shared interner's lock.
struct Symbols<'a> {
    interner: &'a Interner,
    strings: HashMap<Box<str>, Sym, FxBuildHasher>,
    types: HashMap<(Sym, Sym), Sym, FxBuildHasher>,
    /// A plugin-form CRN's fixed-segment symbols and type by its text
    /// before the id, which thousands of a scan's CRNs share (see [`crn`]).
    /// With each, how much longer than the CRN its graph form is (`svc:`
    /// when it lacks it, and the service segment), for the length limit.
    prefixes: HashMap<Box<[u8]>, (Prefix, usize), FxBuildHasher>,
    /// The same for graph-form CRNs, piece by piece.
    pieces: KnownPieces,
}

/// The pieces of graph-form CRNs that parsed ([`crn::Pieces`]), with their
/// symbols. A scan's tens of thousands of prefixes are a few places and
/// types times many accounts, and its CRNs come a unit at a time: runs of
/// one place and one account, with a few types in turn. So the last place
/// and account are compared first, and the types' table is small enough
/// to stay in cache, where a table of whole prefixes is not.
#[derive(Default)]
struct KnownPieces {
    /// `<provider>:<region>` to its two symbols.
    places: HashMap<Box<[u8]>, [Sym; 2], FxBuildHasher>,
    /// `<service>:<kind>` to its two symbols and the node type's.
    kinds: HashMap<Box<[u8]>, [Sym; 3], FxBuildHasher>,
    accounts: HashMap<Box<[u8]>, Sym, FxBuildHasher>,
    last_place: Option<(Vec<u8>, [Sym; 2])>,
    last_account: Option<(Vec<u8>, Sym)>,
}

impl KnownPieces {
    /// The prefix of a CRN whose pieces are all known.
    fn find(&mut self, p: &crn::Pieces<'_>) -> Option<Prefix> {
        let place = recall(&mut self.last_place, &self.places, p.place)?;
        let account = recall(&mut self.last_account, &self.accounts, p.account)?;
        let [service, kind, ty] = *self.kinds.get(p.kind)?;
        Some(Prefix {
            key: [place[0], place[1], service, kind, account],
            ty,
        })
    }

    /// Learns the pieces of a CRN that parsed into `prefix`.
    fn learn(&mut self, p: &crn::Pieces<'_>, prefix: Prefix) {
        let [provider, region, service, kind, account] = prefix.key;
        if self.places.len() + self.kinds.len() + self.accounts.len() >= LOCAL_SYMBOLS {
            *self = KnownPieces::default();
        }
        self.places.insert(p.place.into(), [provider, region]);
        self.kinds.insert(p.kind.into(), [service, kind, prefix.ty]);
        self.accounts.insert(p.account.into(), account);
    }
}

/// What `table` holds for `text`, `last` (the text looked up last, and its
/// value) compared first; a value found in the table becomes the last one,
/// reusing the text's room.
fn recall<V: Copy>(
    last: &mut Option<(Vec<u8>, V)>,
    table: &HashMap<Box<[u8]>, V, FxBuildHasher>,
    text: &[u8],
) -> Option<V> {
    match last {
        Some((t, v)) if t == text => Some(*v),
        Some((t, v)) => {
            let value = *table.get(text)?;
            t.clear();
            t.extend_from_slice(text);
            *v = value;
            Some(value)
        }
        None => {
            let value = *table.get(text)?;
            *last = Some((text.to_owned(), value));
            Some(value)
        }
    }
}

/// Why a CRN's bytes gave no node key.
enum CrnFault {
    /// Text that is not a CRN.
    Invalid(CrnError),
    /// Not text: the message fails, as for any string field that is not UTF-8.
    NotText,
}

/// What a CRN prefix decides: the fixed segments' symbols and the node type.
#[derive(Copy, Clone)]
struct Prefix {
    key: [Sym; 5],
    ty: Sym,
}

impl Symbols<'_> {
    #[inline(always)]
    fn get(&mut self, s: &str) -> Sym {
        if let Some(sym) = self.strings.get(s) {
            return *sym;
        }
        if self.strings.len() >= LOCAL_SYMBOLS {
            self.strings.clear();
        }
        let sym = self.interner.intern(s);
        self.strings.insert(s.into(), sym);
        sym
    }

    /// A CRN's prefix symbols and its id: looked up by its pieces (graph
    /// form) or its prefix (plugin form) when CRNs holding them were parsed
    /// before, parsed in full otherwise. Bytes that are not text (never
    /// those of a known prefix and a printable id) are [`CrnFault::NotText`].
    // Inlined into the decoder: see the JSON scanner's `entries`.
    #[inline(always)]
    fn crn<'c>(&mut self, bytes: &'c [u8]) -> Result<(Prefix, &'c str), CrnFault> {
        let split = crn::split(bytes);
        match split {
            Some(crn::Split::Graph(pieces)) => {
                if let Some(p) = self.pieces.find(&pieces) {
                    return Ok((p, pieces.id));
                }
            }
            Some(crn::Split::Plugin(prefix, id)) => {
                // One too long in graph form is left to the full parse, which refuses it.
                if let Some(&(p, longer)) = self.prefixes.get(prefix)
                    && bytes.len() + longer <= MAX_CRN_LEN
                {
                    return Ok((p, id));
                }
            }
            None => {}
        }
        // Not known yet: the full parse decides, and teaches it.
        let text = std::str::from_utf8(bytes).map_err(|_| CrnFault::NotText)?;
        let (parsed, prefix) = crn::parse(text).map_err(CrnFault::Invalid)?;
        let key = self.key(&parsed);
        let p = Prefix {
            key,
            ty: self.ty(&parsed, key[2], key[3]),
        };
        match split {
            Some(crn::Split::Graph(pieces)) => self.pieces.learn(&pieces, p),
            _ if !prefix.is_empty() => {
                if self.prefixes.len() >= LOCAL_SYMBOLS {
                    self.prefixes.clear();
                }
                let longer = parsed.graph_len().saturating_sub(text.len());
                self.prefixes.insert(prefix.as_bytes().into(), (p, longer));
            }
            _ => {}
        }
        Ok((p, parsed.id))
    }

    fn key(&mut self, crn: &CrnRef<'_>) -> [Sym; 5] {
        [
            self.get(crn.provider),
            self.get(crn.region),
            self.get(crn.service),
            self.get(crn.kind),
            self.get(crn.account),
        ]
    }

    /// The node type `<service>:<kind>`.
    fn ty(&mut self, crn: &CrnRef<'_>, service: Sym, kind: Sym) -> Sym {
        let interner = self.interner;
        *self
            .types
            .entry((service, kind))
            .or_insert_with(|| interner.intern(&format!("{}:{}", crn.service, crn.kind)))
    }
}

fn key_ref<'c>(syms: [Sym; 5], id: &'c str) -> NodeKeyRef<'c> {
    NodeKeyRef {
        provider: syms[0],
        region: syms[1],
        service: syms[2],
        kind: syms[3],
        account: syms[4],
        id,
    }
}

/// What one pass over a node's scanned entries found: the values that
/// fill columns, the symbols of the other entries' keys, and how many of
/// their values need `serde_json`.
#[derive(Default)]
struct Found {
    state: Option<Tok>,
    ts: Option<Tok>,
    created_at: Option<Tok>,
    tags: Option<Tok>,
    /// Which entry the tags are.
    tags_at: Option<usize>,
    keys: Vec<Sym>,
    complex: usize,
}

/// What a top-level key of a node's properties stands for.
#[derive(Copy, Clone)]
enum Role {
    State(Sym),
    Ts(Sym),
    CreatedAt(Sym),
    Tags,
    Prop(Sym),
}

/// The keys of the last scanned nodes of a type: nodes of a type mostly
/// carry one of a few key lists (an instance with or without an image, a
/// stop time), so the next one's are compared with these instead of looked
/// up one by one. A list is kept in the order the document wrote it: a
/// plugin writes a type's keys in one order, its own (a struct's fields,
/// the order it set them), seldom sorted, and a document in that order is
/// put in key order by the list's permutation instead of sorted again.
#[derive(Default)]
struct KeyMemo {
    lists: Vec<Keys>,
    /// The list the last node matched, compared first.
    last: usize,
}

/// Key lists a [`KeyMemo`] keeps for one type; a new one replaces the
/// one after the last matched.
const KEY_LISTS: usize = 4;

impl KeyMemo {
    /// Which list `entries` (in document order) are, if any.
    fn find(&mut self, entries: &[Entry], doc: &str) -> Option<usize> {
        self.find_by(|k| k.matches(entries, doc))
    }

    /// Which list holds the keys of `sorted` (entries in key order, each
    /// key once), in whatever order: a document whose keys come in an
    /// order of their own each time (a hash map's) is sorted, then found
    /// by its keys, not learned again.
    fn find_sorted(&mut self, sorted: &[Entry], doc: &str) -> Option<usize> {
        self.find_by(|k| k.holds(sorted, doc))
    }

    fn find_by(&mut self, is: impl Fn(&Keys) -> bool) -> Option<usize> {
        if self.lists.get(self.last).is_some_and(&is) {
            return Some(self.last);
        }
        let at = self.lists.iter().position(is)?;
        self.last = at;
        Some(at)
    }

    /// Keeps `entries` (in document order) as a list; where it is.
    fn learn(&mut self, entries: &[Entry], doc: &str, tags_key: &str, syms: &mut Symbols<'_>) -> usize {
        let at = if self.lists.len() < KEY_LISTS {
            self.lists.push(Keys::default());
            self.lists.len() - 1
        } else {
            (self.last + 1) % KEY_LISTS
        };
        if let Some(keys) = self.lists.get_mut(at) {
            keys.learn(entries, doc, tags_key, syms);
        }
        self.last = at;
        at
    }

    fn roles(&self, at: usize) -> &[Role] {
        self.lists.get(at).map_or(&[], |k| &k.roles)
    }

    /// The key order of `len` entries found as list `at` in document
    /// order: the position of each key (once, the last of a repeated one),
    /// sorted by key. Entries are read through it rather than moved: they
    /// were written a moment before, and copied whole they would be read
    /// back before their parts are stored.
    fn order(&self, at: usize, len: usize, out: &mut Vec<u32>) {
        out.clear();
        match self.lists.get(at) {
            Some(keys) if !keys.pick.is_empty() => out.extend_from_slice(&keys.pick),
            _ => out.extend(0..len as u32),
        }
    }
}

/// One key list, in document order, with what each key stands for.
#[derive(Default)]
struct Keys {
    /// The keys' text, one after another in document order, and where
    /// each ends.
    text: String,
    ends: Vec<usize>,
    /// Key order: the document position of each distinct key, sorted by
    /// key (of a repeated key, its last); empty when the document's order
    /// is that already.
    pick: Vec<u32>,
    /// What each key is, in key order.
    roles: Vec<Role>,
}

impl Keys {
    /// The text of the key at document position `i`.
    fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 {
            0
        } else {
            self.ends.get(i - 1).copied().unwrap_or(0)
        };
        self.text
            .as_bytes()
            .get(start..self.ends.get(i).copied().unwrap_or(start))
            .unwrap_or_default()
    }

    /// Whether `sorted` (key order, each key once) are these keys.
    fn holds(&self, sorted: &[Entry], doc: &str) -> bool {
        if sorted.len() != self.roles.len() {
            return false;
        }
        sorted.iter().enumerate().all(|(i, e)| {
            let at = if self.pick.is_empty() {
                i
            } else {
                self.pick.get(i).map_or(usize::MAX, |&p| p as usize)
            };
            e.key.bytes(doc) == self.key(at)
        })
    }

    fn matches(&self, entries: &[Entry], doc: &str) -> bool {
        if entries.len() != self.ends.len() {
            return false;
        }
        let mut start = 0;
        for (e, &end) in entries.iter().zip(&self.ends) {
            if e.key.bytes(doc) != self.text.as_bytes().get(start..end).unwrap_or_default() {
                return false;
            }
            start = end;
        }
        true
    }

    fn learn(&mut self, entries: &[Entry], doc: &str, tags_key: &str, syms: &mut Symbols<'_>) {
        self.text.clear();
        self.ends.clear();
        self.pick.clear();
        self.roles.clear();
        for e in entries {
            self.text.push_str(e.key.of(doc));
            self.ends.push(self.text.len());
        }
        // Stable: of equal keys the one written last stays last, and
        // reversed it is the first of its run, the one `dedup` keeps.
        self.pick.extend(0..entries.len() as u32);
        let key = |i: &u32| entries.get(*i as usize).map_or(&[][..], |e| e.key.bytes(doc));
        self.pick.sort_by(|a, b| key(a).cmp(key(b)));
        self.pick.reverse();
        self.pick.dedup_by(|a, b| key(a) == key(b));
        self.pick.reverse();
        for name in self
            .pick
            .iter()
            .filter_map(|&i| entries.get(i as usize))
            .map(|e| e.key.of(doc))
        {
            self.roles.push(match name {
                _ if name == tags_key => Role::Tags,
                "state" => Role::State(syms.get(name)),
                "creation_timestamp" => Role::Ts(syms.get(name)),
                "created_at" => Role::CreatedAt(syms.get(name)),
                _ => Role::Prop(syms.get(name)),
            });
        }
        let in_order = self.pick.iter().enumerate().all(|(i, &p)| p as usize == i);
        if in_order && self.pick.len() == entries.len() {
            self.pick.clear();
        }
    }
}

/// Node types a decoder remembers the keys of before it starts over.
const KEY_MEMOS: usize = 4096;

/// Key text a decoder remembers (a document's keys take up to
/// [`MAX_PROPERTIES_BYTES`]) before it starts over.
const MAX_KEY_BYTES: usize = 8 << 20;

/// The tags of one tags object: key and value symbols, sorted by key.
type TagSet = Box<[(Sym, Sym)]>;

/// Tags objects a decoder remembers, and their text in bytes, before it
/// starts over.
const TAG_SETS: usize = 4096;
const MAX_TAG_SET_BYTES: usize = 4 << 20;

/// Values by the bytes that named them, for a decoder's memos: at most
/// `entries` of them and `bytes` of names (a name longer than `longest`
/// is not kept); past either bound it starts over.
struct Remembered<V> {
    map: HashMap<Box<[u8]>, V, FxBuildHasher>,
    /// The names in `map`, in bytes.
    held: usize,
    entries: usize,
    bytes: usize,
    longest: usize,
}

impl<V> Remembered<V> {
    fn new(entries: usize, bytes: usize, longest: usize) -> Remembered<V> {
        Remembered {
            map: HashMap::default(),
            held: 0,
            entries,
            bytes,
            longest: longest.min(bytes),
        }
    }

    fn get(&self, name: &[u8]) -> Option<&V> {
        self.map.get(name)
    }

    fn get_mut(&mut self, name: &[u8]) -> Option<&mut V> {
        self.map.get_mut(name)
    }

    fn insert(&mut self, name: &[u8], value: V) {
        if name.len() > self.longest {
            return;
        }
        if self.map.len() >= self.entries || self.held + name.len() > self.bytes {
            self.map.clear();
            self.held = 0;
        }
        self.held += name.len();
        self.map.insert(name.into(), value);
    }
}

/// Decodes plugin messages into batches; one per worker.
pub struct Decoder<'a> {
    syms: Symbols<'a>,
    tags_key: &'a str,
    relation: Sym,
    scratch_tags: Vec<(Sym, Sym)>,
    /// The last keys scanned, by node type.
    key_memos: HashMap<Sym, KeyMemo, FxBuildHasher>,
    /// Key text learned since `key_memos` started over, in bytes.
    key_bytes: usize,
    /// The text of the tags object `scratch_tags` was read from (empty
    /// when they were not read from one).
    tags_text: String,
    /// Tags objects read before, by their text: a type's nodes carry a
    /// few sets, in turn (a unit's labels, with or without an owner).
    tag_sets: Remembered<TagSet>,
    entries: Vec<Entry>,
    /// Their key order: positions in `entries`, sorted by key, each key
    /// once.
    order: Vec<u32>,
    /// The entries sorted, when their order is not one met before.
    sorted: Vec<Entry>,
    tag_entries: Vec<Entry>,
    /// Property key symbols of the node being decoded.
    keys: Vec<Sym>,
    /// Its values that need `serde_json`, converted.
    complex: Vec<Value>,
    /// Every document through `serde_json` (the reference the scanner is tested against).
    tree_only: bool,
    /// The endpoints of the edge batch being written, by CRN bytes.
    ends: Ends,
    /// Relation strings seen, by their bytes.
    relations: Remembered<RelationMemo>,
    /// By node shard, the row after the last node found unchanged there:
    /// where the next is looked for first.
    guesses: Vec<u32>,
    /// The fingerprint of the node being decoded: its content hash.
    fingerprint: u64,
    pub stats: DecodeStats,
}

/// What a relation string stands for, and the properties it gives the
/// edges of the batch being written (the string under `relation`), once
/// one edge with it was written there.
#[derive(Copy, Clone)]
struct RelationMemo {
    mapped: MappedRelation,
    props: Option<SharedProps>,
}

/// Relation strings a decoder remembers before it starts over; longer
/// ones than [`MAX_RELATION_MEMO`] bytes are mapped anew each time.
const RELATION_MEMOS: usize = 1024;
const MAX_RELATION_MEMO: usize = 256;

/// Most CRN bytes a decoder keeps for the endpoints of one edge batch (a
/// worker's batches of 8,192 edges take under two MiB); past it, further
/// endpoints are not remembered.
const MAX_END_NAMES: usize = 8 << 20;

/// The endpoints of the edge batch being written, by the CRN bytes that
/// named them: a batch names each about four times, mostly by the same
/// bytes, and an end found here is neither checked, parsed nor looked up
/// again. Kept by the decoder, so its room is reused from batch to batch.
#[derive(Default)]
struct Ends {
    /// [`EdgeBatch::serial`] of the batch the entries are of.
    batch: Option<u64>,
    /// Endpoint index, and where its CRN bytes are in `names`.
    table: hashbrown::HashTable<(u32, u32, u32)>,
    names: Vec<u8>,
}

impl Ends {
    /// Starts over unless `out` is the batch the entries are of.
    fn follow(&mut self, out: &EdgeBatch) {
        if self.batch != Some(out.serial()) {
            self.batch = Some(out.serial());
            self.table.clear();
            self.names.clear();
        }
    }

    fn hash(name: &[u8]) -> u64 {
        FxBuildHasher.hash_one(name)
    }

    fn name(names: &[u8], (_, off, len): (u32, u32, u32)) -> &[u8] {
        names.get(off as usize..off as usize + len as usize).unwrap_or_default()
    }

    fn get(&self, name: &[u8], hash: u64) -> Option<u32> {
        self.table
            .find(hash, |&e| Ends::name(&self.names, e) == name)
            .map(|&(at, _, _)| at)
    }

    fn insert(&mut self, name: &[u8], hash: u64, at: u32) {
        if self.names.len() + name.len() > MAX_END_NAMES {
            return;
        }
        let off = self.names.len() as u32;
        self.names.extend_from_slice(name);
        let names = &self.names;
        self.table.insert_unique(hash, (at, off, name.len() as u32), |&e| {
            Ends::hash(Ends::name(names, e))
        });
    }
}

impl<'a> Decoder<'a> {
    pub fn new(interner: &'a Interner) -> Decoder<'a> {
        Decoder {
            syms: Symbols {
                interner,
                strings: HashMap::default(),
                types: HashMap::default(),
                prefixes: HashMap::default(),
                pieces: KnownPieces::default(),
            },
            tags_key: "tags",
            relation: interner.intern("relation"),
            scratch_tags: Vec::new(),
            tags_text: String::new(),
            tag_sets: Remembered::new(TAG_SETS, MAX_TAG_SET_BYTES, MAX_TAG_SET_BYTES),
            key_memos: HashMap::default(),
            key_bytes: 0,
            entries: Vec::new(),
            order: Vec::new(),
            sorted: Vec::new(),
            tag_entries: Vec::new(),
            keys: Vec::new(),
            complex: Vec::new(),
            tree_only: false,
            ends: Ends::default(),
            relations: Remembered::new(RELATION_MEMOS, RELATION_MEMOS * MAX_RELATION_MEMO, MAX_RELATION_MEMO),
            guesses: Vec::new(),
            fingerprint: 0,
            stats: DecodeStats::default(),
        }
    }

    /// A decoder that reads every properties document through
    /// `serde_json` alone, never the scanner: the reference a decoder must
    /// land the same nodes as. For the fuzz targets.
    #[doc(hidden)]
    pub fn reference(interner: &'a Interner) -> Decoder<'a> {
        let mut d = Decoder::new(interner);
        d.tree_only = true;
        d
    }

    fn reject_node(&mut self, crn: &[u8], why: impl std::fmt::Display) {
        self.stats.rejected_nodes += 1;
        if self.stats.reasons.len() < KEPT_REASONS {
            let crn = String::from_utf8_lossy(crn);
            self.stats.reasons.push(format!("node {crn:?} rejected: {why}"));
        }
    }

    fn reject_edge(&mut self, source: &str, target: &str, why: impl std::fmt::Display) {
        self.stats.rejected_edges += 1;
        if self.stats.reasons.len() < KEPT_REASONS {
            self.stats
                .reasons
                .push(format!("edge {source:?} -> {target:?} rejected: {why}"));
        }
    }

    /// Decodes one node into `out`; `false` when it was rejected, an
    /// `Err` when its CRN is not UTF-8 (the message is malformed).
    pub fn node(&mut self, n: NodeView<'_>, out: &mut NodeBatch) -> Result<bool, WireError> {
        self.node_in(n, out, None)
    }

    /// Decodes one node as [`Decoder::node`] does, unless `graph` holds
    /// it live with the content it is sent with (its
    /// [`source_fingerprint`]): then it is counted and added to
    /// `out.found` as its row, undecoded. A decoded node's content hash is
    /// its fingerprint, so that the next scan finds it so.
    pub fn node_in(&mut self, n: NodeView<'_>, out: &mut NodeBatch, graph: Option<&Graph>) -> Result<bool, WireError> {
        let (prefix, id) = match self.syms.crn(n.crn) {
            Ok(c) => c,
            Err(CrnFault::Invalid(e)) => {
                self.reject_node(n.crn, e);
                return Ok(false);
            }
            Err(CrnFault::NotText) => {
                return Err(WireError::Utf8 {
                    message: wire::NODE,
                    field: 1,
                });
            }
        };
        if !n.cost.is_finite() || n.cost < 0.0 {
            self.reject_node(
                n.crn,
                format_args!("cost {} is not a finite, non-negative number", n.cost),
            );
            return Ok(false);
        }
        if n.properties.len() > MAX_PROPERTIES_BYTES {
            self.reject_node(n.crn, format_args!("properties exceed {MAX_PROPERTIES_BYTES} bytes"));
            return Ok(false);
        }
        let (key, ty) = (prefix.key, prefix.ty);
        let fingerprint = source_fingerprint(n.properties, n.cost);
        if let Some(graph) = graph
            && let Some(found) = self.found(graph, key, id, fingerprint)
        {
            out.found.push(found);
            self.stats.nodes += 1;
            self.stats.unchanged += 1;
            return Ok(true);
        }
        self.fingerprint = fingerprint;
        // The keys the type's last node had, compared as they are met.
        let expected = self
            .key_memos
            .get(&ty)
            .and_then(|m| m.lists.get(m.last))
            .map(|k| json::Expected {
                text: &k.text,
                ends: &k.ends,
            });
        // The scanner checks that the bytes are text as it reads them.
        let scanned = match n.properties {
            _ if self.tree_only => None,
            [] => {
                self.entries.clear();
                Some(("", false))
            }
            props => json::object(props, &mut self.entries, &self.tags_text, expected),
        };
        match scanned {
            Some((doc, matched)) if self.node_scanned(doc, key_ref(key, id), ty, n.cost, matched, out) => {}
            Some(_) | None => {
                // Documents the scanner leaves alone: serde_json decides.
                let props = match self.parse_tree(&n) {
                    Some(props) => props,
                    None => return Ok(false),
                };
                self.node_tree(&props, key_ref(key, id), ty, n.cost, out);
            }
        }
        self.stats.nodes += 1;
        Ok(true)
    }

    /// The row of `graph` that holds the node keyed `key` and `id` live
    /// with content `fingerprint`, if any.
    fn found(&mut self, graph: &Graph, key: [Sym; 5], id: &str, fingerprint: u64) -> Option<FoundNode> {
        let hash = key_ref(key, id).hash();
        let s = Graph::node_shard_of(hash);
        let shard = graph.node_shards().get(s)?;
        if self.guesses.len() <= s {
            self.guesses.resize(s + 1, 0);
        }
        let guess = self.guesses.get_mut(s)?;
        let row = shard.unchanged_row(hash, &key, id.as_bytes(), fingerprint, *guess)?;
        *guess = row.wrapping_add(1);
        shard.prefetch_guess(*guess);
        Some(FoundNode {
            shard: u16::try_from(s).ok()?,
            row,
            provider: key[0],
        })
    }

    /// Properties as a `serde_json` tree; `None` (the node rejected) when invalid.
    fn parse_tree(&mut self, n: &NodeView<'_>) -> Option<serde_json::Map<String, Value>> {
        if n.properties.is_empty() {
            return Some(serde_json::Map::new());
        }
        match serde_json::from_slice::<Value>(n.properties) {
            Ok(Value::Object(m)) => Some(m),
            Ok(other) => {
                self.reject_node(
                    n.crn,
                    format_args!("properties must be a JSON object, not {}", kind(&other)),
                );
                None
            }
            Err(e) => {
                self.reject_node(n.crn, format_args!("properties are not valid JSON: {e}"));
                None
            }
        }
    }

    /// Writes a node from the scanned entries of `doc`; `false` when a
    /// value needs the tree after all (nothing is written then). `matched`:
    /// the scan found the keys of the type's last key list, in its order.
    fn node_scanned(
        &mut self,
        doc: &str,
        key: NodeKeyRef<'_>,
        ty: Sym,
        cost: f64,
        mut matched: bool,
        out: &mut NodeBatch,
    ) -> bool {
        // One pass over the (sorted, deduplicated) entries: the ones that
        // fill columns, and the property keys' symbols.
        let mut found = Found {
            keys: std::mem::take(&mut self.keys),
            ..Found::default()
        };
        found.keys.clear();
        let Decoder {
            syms,
            tags_key,
            entries,
            order,
            sorted,
            key_memos,
            key_bytes,
            ..
        } = self;
        if (key_memos.len() >= KEY_MEMOS && !key_memos.contains_key(&ty)) || *key_bytes > MAX_KEY_BYTES {
            key_memos.clear();
            *key_bytes = 0;
            matched = false;
        }
        // Entries that match a list in document order take its key order;
        // others are sorted and found by their keys, or learned as written.
        let memo = key_memos.entry(ty).or_default();
        let found_at = if matched {
            Some(memo.last)
        } else {
            memo.find(entries, doc)
        };
        let at = match found_at {
            Some(at) => {
                memo.order(at, entries.len(), order);
                at
            }
            None => {
                sorted.clear();
                sorted.extend_from_slice(entries);
                if !json::sort_dedup(doc, sorted) {
                    return false;
                }
                match memo.find_sorted(sorted, doc) {
                    Some(at) => {
                        std::mem::swap(entries, sorted);
                        order.clear();
                        order.extend(0..entries.len() as u32);
                        at
                    }
                    None => {
                        *key_bytes += entries.iter().map(|e| e.key.bytes(doc).len()).sum::<usize>();
                        let at = memo.learn(entries, doc, tags_key, syms);
                        memo.order(at, entries.len(), order);
                        at
                    }
                }
            }
        };
        // Values of a repeated key but the last are not kept, yet
        // serde_json reads them, and one it refuses fails the document.
        if order.len() < entries.len() && !json::dropped_read(doc, entries, order) {
            return false;
        }
        let sorted = in_key_order(entries, order);
        for (i, (e, role)) in sorted.zip(memo.roles(at)).enumerate() {
            let sym = match *role {
                Role::Tags => {
                    found.tags = Some(e.value);
                    found.tags_at = Some(i);
                    continue;
                }
                Role::State(sym) => {
                    found.state = Some(e.value);
                    sym
                }
                Role::Ts(sym) => {
                    found.ts = Some(e.value);
                    sym
                }
                Role::CreatedAt(sym) => {
                    found.created_at = Some(e.value);
                    sym
                }
                Role::Prop(sym) => sym,
            };
            found.complex += usize::from(matches!(e.value, Tok::Number(_) | Tok::Str(_, true) | Tok::Nested(_)));
            found.keys.push(sym);
        }
        let written = self.node_entries(doc, key, ty, cost, &found, out);
        self.keys = found.keys;
        written
    }

    /// [`Self::node_scanned`] once the entries are sorted out.
    fn node_entries(
        &mut self,
        doc: &str,
        key: NodeKeyRef<'_>,
        ty: Sym,
        cost: f64,
        found: &Found,
        out: &mut NodeBatch,
    ) -> bool {
        let Found {
            state,
            ts,
            created_at,
            tags,
            tags_at,
            ref keys,
            complex,
        } = *found;
        let state = match state {
            Some(Tok::Str(r, false)) => r.of(doc),
            Some(Tok::Str(..)) => return false,
            _ => "unknown",
        };
        let creation_ts = match scanned_creation_time(doc, ts, created_at) {
            Some(ts) => ts,
            None => return false,
        };
        match tags {
            Some(Tok::Nested(r)) if doc.as_bytes().get(r.start as usize) == Some(&b'{') => {
                // Neighbouring nodes mostly carry the same tags, word for word.
                let text = r.bytes(doc);
                if text != self.tags_text.as_bytes() && !self.recall_tags(doc, r) && !self.scan_tags(doc, r) {
                    return false;
                }
            }
            other => {
                // Tags that are not an object are no tags; what the scan did
                // not check (a number, an escaped string, an array) must
                // still read as JSON, as the document would whole.
                if let Some(tok @ (Tok::Number(_) | Tok::Str(_, true) | Tok::Nested(_))) = other
                    && tree_value(doc, tok).is_none()
                {
                    return false;
                }
                self.scratch_tags.clear();
                self.tags_text.clear();
            }
        }
        let input = NodeInput {
            key,
            ty,
            state: self.syms.get(state),
            cost_usd_mo: cost as f32,
            creation_ts,
        };
        // Values that need serde_json are converted before anything is written.
        self.complex.clear();
        if complex > 0 {
            let sorted = in_key_order(&self.entries, &self.order);
            for (i, e) in sorted.enumerate() {
                if matches!(e.value, Tok::Number(_) | Tok::Str(_, true) | Tok::Nested(_)) && Some(i) != tags_at {
                    match tree_value(doc, e.value) {
                        Some(v) => self.complex.push(v),
                        None => return false,
                    }
                }
            }
        }
        let (entries, order, complex) = (&self.entries, &self.order, &self.complex);
        out.push_sent(input, &self.scratch_tags, self.fingerprint, |w| {
            let mut complex = complex.iter();
            let mut keys = keys.iter();
            let sorted = in_key_order(entries, order);
            for (i, e) in sorted.enumerate() {
                if Some(i) == tags_at {
                    continue;
                }
                let Some(&k) = keys.next() else { break };
                match e.value {
                    Tok::Null => w.null(k),
                    Tok::Bool(b) => w.bool(k, b),
                    Tok::Int(i) => w.int(k, i),
                    Tok::Float(bits) => w.float(k, f64::from_bits(bits)),
                    Tok::Str(r, false) => w.str(k, r.of(doc)),
                    Tok::Number(_) | Tok::Str(_, true) | Tok::Nested(_) => {
                        if let Some(v) = complex.next() {
                            write_value(w, k, v);
                        }
                    }
                }
            }
        });
        true
    }

    /// Takes the tags of a tags object read before, the text at `r` of
    /// `doc`; `false` when there is none.
    fn recall_tags(&mut self, doc: &str, r: json::Range) -> bool {
        let text = r.of(doc);
        let Some(tags) = self.tag_sets.get(text.as_bytes()) else {
            return false;
        };
        self.scratch_tags.clear();
        self.scratch_tags.extend_from_slice(tags);
        self.tags_text.clear();
        self.tags_text.push_str(text);
        true
    }

    /// Reads the tags object at `r` of `doc` into the tag columns' symbols
    /// (remembering its text); `false` when a value needs the tree after all.
    fn scan_tags(&mut self, doc: &str, r: json::Range) -> bool {
        self.scratch_tags.clear();
        self.tags_text.clear();
        if json::nested_object(doc, r, &mut self.tag_entries).is_none() {
            return false;
        }
        for e in &self.tag_entries {
            let v = match e.value {
                Tok::Str(r, false) => self.syms.get(r.of(doc)),
                Tok::Int(i) => self.syms.get(itoa(i, &mut [0u8; 20])),
                Tok::Bool(b) => self.syms.get(if b { "true" } else { "false" }),
                Tok::Null => self.syms.get("null"),
                other => match tree_value(doc, other) {
                    Some(Value::String(s)) => self.syms.get(&s),
                    Some(v) => self.syms.get(&v.to_string()),
                    None => return false,
                },
            };
            let k = self.syms.get(e.key.of(doc));
            self.scratch_tags.push((k, v));
        }
        self.tags_text.push_str(r.of(doc));
        self.tag_sets
            .insert(self.tags_text.as_bytes(), self.scratch_tags.as_slice().into());
        true
    }

    /// Writes a node from its `serde_json` tree.
    fn node_tree(
        &mut self,
        props: &serde_json::Map<String, Value>,
        key: NodeKeyRef<'_>,
        ty: Sym,
        cost: f64,
        out: &mut NodeBatch,
    ) {
        let state = props.get("state").and_then(Value::as_str).unwrap_or("unknown");
        let creation_ts = creation_time(props);
        self.scratch_tags.clear();
        self.tags_text.clear();
        if let Some(Value::Object(tags)) = props.get(self.tags_key) {
            for (k, v) in tags {
                let v = match v {
                    Value::String(s) => self.syms.get(s),
                    other => self.syms.get(&other.to_string()),
                };
                let k = self.syms.get(k);
                self.scratch_tags.push((k, v));
            }
        }
        let input = NodeInput {
            key,
            ty,
            state: self.syms.get(state),
            cost_usd_mo: cost as f32,
            creation_ts,
        };
        let tags_key = self.tags_key;
        let keys: Vec<Sym> = props
            .keys()
            .filter(|k| *k != tags_key)
            .map(|k| self.syms.get(k))
            .collect();
        out.push_sent(input, &self.scratch_tags, self.fingerprint, |w| {
            for ((_, v), k) in props.iter().filter(|(k, _)| *k != tags_key).zip(keys) {
                write_value(w, k, v);
            }
        });
    }

    /// Decodes one edge into `out`: `Ok(false)` when it was rejected, an
    /// `Err` when a CRN or the relation is not UTF-8 (the message is not a
    /// `ScanResponse`).
    ///
    /// A batch names each endpoint about four times, mostly by the same
    /// CRN bytes: an endpoint named by bytes seen before in the batch is
    /// taken as it is, its text neither checked nor parsed again. A
    /// relation string is checked and mapped once, and its property written
    /// once a batch.
    pub fn edge(&mut self, e: EdgeView<'_>, out: &mut EdgeBatch) -> Result<bool, WireError> {
        let relation = match self.relations.get(e.relation) {
            Some(memo) => *memo,
            None => {
                let memo = RelationMemo {
                    mapped: map_relation(wire::edge_str(e.relation, 3)?),
                    props: None,
                };
                self.relations.insert(e.relation, memo);
                memo
            }
        };
        self.ends.follow(out);
        let hashes = (Ends::hash(e.source_crn), Ends::hash(e.target_crn));
        let known = (
            self.ends.get(e.source_crn, hashes.0),
            self.ends.get(e.target_crn, hashes.1),
        );
        // An end not seen before, found by its bytes or parsed; one that
        // is not text fails the message (the source first, in wire order)
        // before a CRN is refused.
        let src_new = known.0.is_none().then(|| self.syms.crn(e.source_crn)).transpose();
        let dst_new = known.1.is_none().then(|| self.syms.crn(e.target_crn)).transpose();
        let not_text = |field| WireError::Utf8 {
            message: wire::EDGE,
            field,
        };
        let (src_new, dst_new) = match (src_new, dst_new) {
            (Ok(s), Ok(d)) => (s, d),
            (Err(CrnFault::NotText), _) => return Err(not_text(1)),
            (_, Err(CrnFault::NotText)) => return Err(not_text(2)),
            (Err(CrnFault::Invalid(err)), _) | (_, Err(CrnFault::Invalid(err))) => {
                let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                self.reject_edge(&text(e.source_crn), &text(e.target_crn), err);
                return Ok(false);
            }
        };
        let src = match (known.0, src_new) {
            (Some(at), _) => at,
            (None, Some((p, id))) => {
                let at = out.endpoint(key_ref(p.key, id));
                self.ends.insert(e.source_crn, hashes.0, at);
                at
            }
            (None, None) => return Ok(false),
        };
        let dst = match (known.1, dst_new) {
            (Some(at), _) => at,
            (None, Some((p, id))) => {
                let at = out.endpoint(key_ref(p.key, id));
                if e.target_crn != e.source_crn {
                    self.ends.insert(e.target_crn, hashes.1, at);
                }
                at
            }
            (None, None) => return Ok(false),
        };
        // The relation's bytes were checked when it was first seen.
        let text = || std::str::from_utf8(e.relation).unwrap_or_default();
        let mapped = relation.mapped;
        if !mapped.known {
            let text = text();
            match self.stats.unknown_relations.get_mut(text) {
                Some(count) => *count += 1,
                None => {
                    self.stats.unknown_relations.insert(text.to_owned(), 1);
                }
            }
        }
        let (from, to) = if mapped.reversed { (dst, src) } else { (src, dst) };
        match relation.props {
            Some(props) if out.push_sharing(from, to, mapped.relation, props) => {}
            _ => {
                let key = self.relation;
                let props = out.push_between(from, to, mapped.relation, |w| w.str(key, text()));
                if let Some(memo) = self.relations.get_mut(e.relation) {
                    memo.props = props;
                }
            }
        }
        self.stats.edges += 1;
        Ok(true)
    }

    /// Decodes a whole scan response.
    pub fn response(&mut self, r: &pb::ScanResponse, nodes: &mut NodeBatch, edges: &mut EdgeBatch) {
        for n in &r.nodes {
            // A decoded message's strings are UTF-8 already.
            let _ = self.node(n.into(), nodes);
        }
        for e in &r.edges {
            // A decoded message's strings are UTF-8 already.
            let _ = self.edge(e.into(), edges);
        }
    }

    /// Decodes a scan response straight from its wire bytes (see [`wire`]).
    /// An `Err` means the bytes are not a `ScanResponse` at all: the items
    /// before the fault are decoded, the rest are not.
    pub fn wire(&mut self, bytes: &[u8], nodes: &mut NodeBatch, edges: &mut EdgeBatch) -> Result<(), WireError> {
        self.wire_in(bytes, nodes, edges, None)
    }

    /// [`Decoder::wire`], leaving undecoded the nodes `graph` holds as
    /// they are sent ([`Decoder::node_in`]).
    pub fn wire_in(
        &mut self,
        bytes: &[u8],
        nodes: &mut NodeBatch,
        edges: &mut EdgeBatch,
        graph: Option<&Graph>,
    ) -> Result<(), WireError> {
        for item in wire::items(bytes) {
            match item? {
                wire::Item::Node(n) => self.node_in(n, nodes, graph)?,
                wire::Item::Edge(e) => self.edge(e, edges)?,
            };
        }
        Ok(())
    }
}

/// `entries` in key order: read through `order`, their positions sorted
/// by key (each key once).
fn in_key_order<'e>(entries: &'e [Entry], order: &'e [u32]) -> impl Iterator<Item = &'e Entry> + 'e {
    order.iter().filter_map(|&j| entries.get(j as usize))
}

/// A scanned value that needs `serde_json` (numbers other than short
/// integers, escaped strings, arrays and objects) as a tree.
fn tree_value(doc: &str, tok: Tok) -> Option<Value> {
    let text = match tok {
        Tok::Number(r) if r.of(doc).bytes().any(|b| matches!(b, b'.' | b'e' | b'E')) => {
            // A fraction or exponent is a float to serde_json: read it as
            // one, by the same parser, without building a tree.
            return serde_json::from_str::<f64>(r.of(doc))
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number);
        }
        Tok::Number(r) | Tok::Nested(r) => r.of(doc),
        Tok::Str(r, _) => doc.get(r.start as usize - 1..r.end as usize + 1)?,
        Tok::Null => return Some(Value::Null),
        Tok::Bool(b) => return Some(Value::Bool(b)),
        Tok::Int(i) => return Some(Value::from(i)),
        Tok::Float(bits) => return serde_json::Number::from_f64(f64::from_bits(bits)).map(Value::Number),
    };
    serde_json::from_str(text).ok()
}

/// [`creation_time`] over scanned entries; `None` when a value needs the tree.
fn scanned_creation_time(doc: &str, ts: Option<Tok>, created_at: Option<Tok>) -> Option<u64> {
    match ts {
        Some(Tok::Int(t)) if t >= 0 => {
            let t = t as u64;
            return Some(if t > 100_000_000_000 { t / 1000 } else { t });
        }
        // A long integer or `-0` may still be one to `serde_json`.
        Some(Tok::Number(_)) => return None,
        // A fraction is not (`serde_json` holds it as an `f64`): as any
        // other value, it leaves the creation time to `created_at`.
        _ => {}
    }
    Some(match created_at {
        Some(Tok::Str(r, false)) => rfc3339(r.of(doc)),
        Some(Tok::Str(_, true)) => return None,
        _ => 0,
    })
}

fn rfc3339(s: &str) -> u64 {
    chrono::DateTime::parse_from_rfc3339(s)
        .ok()
        .and_then(|t| u64::try_from(t.timestamp()).ok())
        .unwrap_or(0)
}

/// The decimal text of `i`, written into `buf`.
fn itoa(i: i64, buf: &mut [u8; 20]) -> &str {
    let mut n = i.unsigned_abs();
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if i < 0 {
        at -= 1;
        buf[at] = b'-';
    }
    std::str::from_utf8(&buf[at..]).unwrap_or("0")
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `creation_timestamp` (Unix seconds, or milliseconds when implausibly
/// large) or `created_at` (RFC 3339); 0 when neither is usable.
fn creation_time(props: &serde_json::Map<String, Value>) -> u64 {
    if let Some(ts) = props.get("creation_timestamp").and_then(Value::as_u64) {
        return if ts > 100_000_000_000 { ts / 1000 } else { ts };
    }
    props.get("created_at").and_then(Value::as_str).map_or(0, rfc3339)
}

fn write_value(w: &mut PropWriter<'_>, key: Sym, v: &Value) {
    match v {
        Value::Null => w.null(key),
        Value::Bool(b) => w.bool(key, *b),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => w.int(key, i),
            (None, Some(f)) => w.float(key, f),
            (None, None) => w.str(key, &n.to_string()),
        },
        Value::String(s) => w.str(key, s),
        other => w.json(key, &other.to_string()),
    }
}

#[cfg(test)]
mod tests;

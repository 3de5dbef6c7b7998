//! Node and edge shards: structs of arrays with aligned rows.

use std::hash::Hasher;

use hashbrown::HashTable;
use rustc_hash::FxHasher;

use super::batch::{BatchNode, NodeBatch, key_hash};
use super::col::Col;
use super::mem::{At, BitSet, ID_PREFETCH, Prefetch, Span, content_hash, fmix64, prefetch_blob, push_blob};
pub use super::mem::{prefetch, prefetch_bytes};
use super::schema::{self, EdgeFields, Kind, NodeFields, NodeRow, Phase, Reachability};
use super::upsert::IngestStats;
pub use super::upsert::Upsert;
use crate::ids::{NodeId, NodeSlot, Sym};
use crate::relation::Relation;

/// The generation after `g` (24 bits, wrapping): a compacted shard's.
pub fn next_generation(g: u32) -> u32 {
    g.wrapping_add(1) & NodeId::MAX_GENERATION
}

/// A node or edge is visible when `valid_to` is 0 or later than `now_us` (SPEC 3.3).
#[inline]
pub fn visible(valid_to: u64, now_us: u64) -> bool {
    valid_to == 0 || valid_to > now_us
}

/// Rows whose visibility may have changed since the adjacency index was
/// last built, in the order they changed, repeats allowed: the rows an
/// incremental rebuild must look at again ([`super::adjacency`]). Past a
/// bound it forgets the rows and only remembers that too many changed.
#[derive(Default)]
pub struct Touched {
    rows: Vec<u32>,
    overflow: bool,
}

impl Touched {
    /// Notes `row` of a shard of `len` rows.
    #[inline]
    fn mark(&mut self, row: u32, len: usize) {
        if self.overflow {
            return;
        }
        if self.rows.len() >= len / 2 + 1024 {
            self.overflow = true;
            self.rows = Vec::new();
            return;
        }
        self.rows.push(row);
    }

    /// The rows noted since the last [`Touched::clear`]; `None` when there
    /// were too many to keep.
    pub fn rows(&self) -> Option<&[u32]> {
        (!self.overflow).then_some(&self.rows[..])
    }

    pub fn clear(&mut self) {
        self.rows.clear();
        self.overflow = false;
    }

    /// Nothing listed, too many changed: every row is to be looked at
    /// again (a compacted shard's rows all have new numbers).
    fn overflowed() -> Touched {
        Touched {
            rows: Vec::new(),
            overflow: true,
        }
    }

    fn heap_bytes(&self) -> usize {
        self.rows.capacity() * 4
    }
}

/// The key hash of row `r` of a node shard's columns.
#[inline]
fn row_hash(keys: &[[Sym; 5]], ids: &[At], arena: &[u8], r: usize) -> u64 {
    key_hash(keys[r], ids[r].get(arena))
}

/// Whether row `r` of a node shard's columns is keyed `syms` and `id`.
#[inline]
fn keyed(keys: &[[Sym; 5]], ids: &[At], arena: &[u8], r: u32, syms: &[Sym; 5], id: &[u8]) -> bool {
    keys.get(r as usize) == Some(syms) && ids.get(r as usize).is_some_and(|s| s.get(arena) == id)
}

/// What an upsert of a node would do to the row keyed like it
/// ([`NodeShard::sift_row`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Sift {
    /// Nothing: the row is live with the same content hash.
    Unchanged,
    /// Give it the node's content hash: it holds the same content under
    /// another ([`NodeShard::rehash`]).
    Rehashed,
    /// Write a new version of it.
    Changed,
}

/// Where a node row's key leads in its shard's index.
enum Slot {
    Found(u32),
    /// Not there: the row number it is given.
    New(u32),
}

/// The node shard and its row-wide operations, from [`crate::node_schema!`].
macro_rules! node_shard {
    (
        identity { $($(#[$idoc:meta])* $ifield:ident / $icol:ident : $ikind:ident = $iname:literal,)* }
        fields { $($(#[$doc:meta])* $field:ident / $col:ident : $kind:ident = $name:literal,)* }
    ) => {
        /// One node shard: a column for each field of the schema, aligned
        /// by row. Deletion is logical (`valid_to`); rows move only in a compaction.
        #[derive(Default)]
        pub struct NodeShard {
            pub generation: u32,
            $($(#[$idoc])* pub $icol: <schema::$ikind as Kind>::Column,)*
            $($(#[$doc])* pub $col: <schema::$kind as Kind>::Column,)*
            /// Hash of the discovered fields, to tell a changed node from an unchanged one.
            /// (A row's key hash, by which the index finds it, is not kept:
            /// [`NodeShard::key_hash`] works it out again from the key.)
            pub content: Col<u64>,
            /// The scan that last reported the row.
            pub seen: Col<u32>,
            pub arena: Col<u8>,
            pub index: HashTable<u32>,
            /// Rows changed since the last commit, each once.
            pub dirty: Vec<u32>,
            pub dirty_set: BitSet,
            /// Rows retired, revived or loaded since the adjacency index was built.
            pub touched: Touched,
            /// Rows inserted, changed, revived, retired or loaded since the last
            /// [`super::Graph::take_row_changes`].
            pub changed: Touched,
        }

        impl NodeShard {
            /// A row's fields, borrowed.
            pub fn fields(&self, row: u32) -> NodeFields<'_> {
                let r = row as usize;
                NodeFields {
                    $($ifield: <schema::$ikind as Kind>::get(&self.$icol, &self.arena, r),)*
                    $($field: <schema::$kind as Kind>::get(&self.$col, &self.arena, r),)*
                }
            }

            /// Overwrites every field of row `r` but its identity with `f`'s.
            fn set_fields(&mut self, r: usize, f: &NodeFields<'_>) {
                $(<schema::$kind as Kind>::set(&mut self.$col, &mut self.arena, r, f.$field);)*
            }

            fn reserve_columns(&mut self, rows: usize) {
                $(<schema::$ikind as Kind>::reserve(&mut self.$icol, rows);)*
                $(<schema::$kind as Kind>::reserve(&mut self.$col, rows);)*
            }

            fn shrink_columns(&mut self) {
                $(<schema::$ikind as Kind>::shrink(&mut self.$icol);)*
                $(<schema::$kind as Kind>::shrink(&mut self.$col);)*
            }

            fn columns_heap_bytes(&self) -> usize {
                0 $(+ <schema::$ikind as Kind>::heap_bytes(&self.$icol))*
                    $(+ <schema::$kind as Kind>::heap_bytes(&self.$col))*
            }
        }
    };
}

crate::node_schema!(node_shard);

/// The outcome of the heuristics phase for one node.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Verdict<'a> {
    pub is_waste: bool,
    pub reason: &'a str,
    /// The rule that decided, when one did.
    pub rule: Option<Sym>,
}

impl Verdict<'_> {
    /// Not waste, no rule.
    pub const CLEAR: Verdict<'static> = Verdict {
        is_waste: false,
        reason: "",
        rule: None,
    };
}

/// Copies a batch row's id, tags and properties into `arena` as blobs.
/// Returns where each landed.
pub fn push_row_bytes(arena: &mut Vec<u8>, n: &BatchNode, buf: &[u8]) -> (At, At, At) {
    (
        push_blob(arena, n.id.get(buf)),
        push_blob(arena, n.tags.get(buf)),
        push_blob(arena, n.props.get(buf)),
    )
}

impl NodeShard {
    /// Starts loading what reading row `r` touches ([`super::Graph::prefetch_node`]).
    pub fn prefetch_row(&self, r: usize, stage: Prefetch) {
        if r >= self.ty.len() {
            return;
        }
        match stage {
            Prefetch::Row => {
                prefetch(&self.ty[r]);
                prefetch(&self.key[r]);
                prefetch(&self.state[r]);
                prefetch(&self.cost[r]);
                prefetch(&self.creation_ts[r]);
                prefetch(&self.valid_from[r]);
                prefetch(&self.valid_to[r]);
                prefetch(&self.id[r]);
                prefetch(&self.tags[r]);
                prefetch(&self.props[r]);
            }
            Prefetch::Lists => {
                // A blob's length lies in the arena beside it: the first
                // lines are asked for, enough for a typical node's whole.
                for at in [self.tags[r], self.props[r]] {
                    prefetch_blob(&self.arena, at, 256);
                }
            }
        }
    }

    pub fn len(&self) -> usize {
        self.key.len()
    }

    pub fn is_empty(&self) -> bool {
        self.key.is_empty()
    }

    /// The hash of row `r`'s key ([`super::batch::key_hash`] of its
    /// segments and physical id), by which the index finds it.
    #[inline]
    pub fn key_hash(&self, r: usize) -> u64 {
        row_hash(&self.key, &self.id, &self.arena, r)
    }

    /// Rebuilds the key index from the keys (after loading columns).
    pub fn rebuild_index(&mut self) {
        let n = self.len();
        let mut index = HashTable::with_capacity(n);
        let (keys, ids, arena) = (&self.key, &self.id, &self.arena);
        for r in 0..n {
            if r + 8 < n {
                prefetch_blob(arena, ids[r + 8], ID_PREFETCH);
            }
            let h = row_hash(keys, ids, arena, r);
            index.insert_unique(h, r as u32, |&x| row_hash(keys, ids, arena, x as usize));
        }
        self.index = index;
    }

    /// Sizes an empty shard once for the rows it is about to take, with
    /// an eighth more arena for the waste reasons the analysis writes next
    /// (one node in five, tens of bytes each), so that does not copy the
    /// arena to grow it; capacity never written costs no memory.
    pub fn reserve_for<'a>(&mut self, rows: impl Iterator<Item = &'a BatchNode>) {
        let (rows, bytes) = rows.fold((0usize, 0usize), |(rows, bytes), n| {
            (rows + 1, bytes + (n.id.len + n.tags.len + n.props.len) as usize)
        });
        self.reserve(rows, bytes + bytes / 8);
    }

    /// Makes room for `rows` more rows and `bytes` more arena bytes, so a
    /// large ingest grows each column once instead of doubling repeatedly.
    pub fn reserve(&mut self, rows: usize, bytes: usize) {
        self.reserve_columns(rows);
        self.content.reserve(rows);
        self.seen.reserve(rows);
        self.dirty.reserve(rows);
        self.arena.reserve(bytes);
        let (keys, ids, arena) = (&self.key, &self.id, &self.arena);
        self.index.reserve(rows, |&r| row_hash(keys, ids, arena, r as usize));
    }

    pub fn find(&self, hash: u64, key: &[Sym; 5], id: &[u8]) -> Option<u32> {
        self.index
            .find(hash, |&row| {
                let r = row as usize;
                self.key[r] == *key && self.id[r].get(&self.arena) == id
            })
            .copied()
    }

    /// [`NodeShard::find`] in two steps, for many lookups at once: the
    /// first row with the key's hash and segments, its id's bytes (in the
    /// arena, far from anything read lately) asked for, not yet compared.
    /// Then [`NodeShard::find_end`].
    pub fn find_start(&self, hash: u64, key: &[Sym; 5]) -> Option<u32> {
        let row = *self.index.find(hash, |&row| self.key[row as usize] == *key)?;
        if let Some(&id) = self.id.get(row as usize) {
            prefetch_blob(&self.arena, id, ID_PREFETCH);
        }
        Some(row)
    }

    /// What [`NodeShard::find`] answers, given the row [`NodeShard::find_start`] gave.
    pub fn find_end(&self, start: Option<u32>, hash: u64, key: &[Sym; 5], id: &[u8]) -> Option<u32> {
        let row = start?;
        if self.id.get(row as usize).is_some_and(|s| s.get(&self.arena) == id) {
            return Some(row);
        }
        // Another node with the same segments came first: look further.
        self.find(hash, key, id)
    }

    fn mark_dirty(&mut self, row: u32) {
        if self.dirty_set.insert(row as usize) {
            self.dirty.push(row);
        }
    }

    pub fn take_dirty(&mut self) -> Vec<u32> {
        self.dirty_set.clear();
        std::mem::take(&mut self.dirty)
    }

    fn push_row(&mut self, hash: u64, key: [Sym; 5], id: &[u8]) -> u32 {
        let row = self.len() as u32;
        let empty = crate::intern::well_known::EMPTY;
        let n = BatchNode {
            hash,
            syms: key,
            ty: empty,
            state: empty,
            cost: 0.0,
            creation_ts: 0,
            id: Span::default(),
            tags: Span::default(),
            props: Span::default(),
            content: 0,
        };
        let id = push_blob(self.arena.to_mut(), id);
        self.push_columns(&n, (id, At::EMPTY, At::EMPTY), 0, 0);
        let (keys, ids, arena) = (&self.key, &self.id, &self.arena);
        self.index
            .insert_unique(hash, row, |&r| row_hash(keys, ids, arena, r as usize));
        row
    }

    /// Inserts or updates a node from a batch row at scan time `now_us`.
    /// One probe of the index either finds the row or reserves its slot.
    pub fn upsert(&mut self, n: &BatchNode, buf: &[u8], now_us: u64, scan: u32) -> (u32, Upsert) {
        match self.slot(n, Some(buf)) {
            Slot::Found(row) => {
                let Some(outcome) = self.seen_again(row, n, Some(buf), scan) else {
                    return (row, Upsert::Unchanged);
                };
                let tags = push_blob(self.arena.to_mut(), n.tags.get(buf));
                let props = push_blob(self.arena.to_mut(), n.props.get(buf));
                self.rewrite(row, n, (tags, props), now_us, outcome);
                (row, outcome)
            }
            Slot::New(row) => {
                let blobs = push_row_bytes(self.arena.to_mut(), n, buf);
                self.push_new(n, blobs, now_us, scan);
                (row, Upsert::Inserted)
            }
        }
    }

    /// The row keyed `syms` and `id` (hashed to `hash`), if any. Row
    /// `guess` is tried first: a later scan reports a shard's resources in
    /// about the order the one before did, so the row after the last one
    /// found is most often the one, its columns read beside the last
    /// row's, and the index is not probed. A key has one row in its shard,
    /// so a guess keyed so is the row the index would give.
    #[inline]
    fn keyed_row(&self, hash: u64, syms: &[Sym; 5], id: &[u8], guess: u32) -> Option<u32> {
        let (keys, ids, arena) = (&self.key, &self.id, &self.arena);
        if keyed(keys, ids, arena, guess, syms, id) {
            return Some(guess);
        }
        self.index
            .find(hash, |&r| keyed(keys, ids, arena, r, syms, id))
            .copied()
    }

    /// The live row keyed `syms` and `id` whose content hash is `content`
    /// (a node's [`super::source_fingerprint`], before it is decoded):
    /// what a later scan asks of each node a source sends, to leave the
    /// unchanged ones undecoded. Row `guess` is tried first, as `keyed_row` tries it.
    #[inline]
    pub fn unchanged_row(&self, hash: u64, syms: &[Sym; 5], id: &[u8], content: u64, guess: u32) -> Option<u32> {
        if self.index.is_empty() {
            return None;
        }
        let row = self.keyed_row(hash, syms, id, guess)?;
        let r = row as usize;
        (self.valid_to.get(r) == Some(&0) && self.content.get(r) == Some(&content)).then_some(row)
    }

    /// Starts loading what [`NodeShard::unchanged_row`] reads of row `r`
    /// (its key, the first bytes of its id, `valid_to` and content hash):
    /// asked for the row after one just found, the next guess in this
    /// shard, which a stream in the order of the last scan asks for a few
    /// hundred nodes later, by when it is in cache.
    #[inline]
    pub fn prefetch_guess(&self, r: u32) {
        let r = r as usize;
        if let (Some(key), Some(&id)) = (self.key.get(r), self.id.get(r)) {
            prefetch(key);
            // Most ids are shorter than a line: its first line or two.
            prefetch_blob(&self.arena, id, 64);
        }
        if let (Some(valid_to), Some(content)) = (self.valid_to.get(r), self.content.get(r)) {
            prefetch(valid_to);
            prefetch(content);
        }
    }

    /// The row keyed like `n` (its id read from `buf`), if any, and what
    /// an upsert of `n` would do to it: a read, what a later scan's stage
    /// asks while the sources stream. Row `guess` is tried first, as `keyed_row` tries it.
    #[inline]
    pub fn sift_row(&self, n: &BatchNode, buf: &[u8], guess: u32) -> Option<(u32, Sift)> {
        let row = self.keyed_row(n.hash, &n.syms, n.id.get(buf), guess)?;
        let r = row as usize;
        let sift = if self.valid_to.get(r) != Some(&0) {
            Sift::Changed
        } else if self.content.get(r) == Some(&n.content) {
            Sift::Unchanged
        } else if self.same_content(r, n, buf) {
            Sift::Rehashed
        } else {
            Sift::Changed
        };
        Some((row, sift))
    }

    /// Whether row `r` holds what `n` (its bytes in `buf`) holds, field by
    /// field: asked when their content hashes differ, which they may for
    /// equal content (a fingerprint of other bytes, or a hash of the
    /// decoded fields where the row was read from the store).
    fn same_content(&self, r: usize, n: &BatchNode, buf: &[u8]) -> bool {
        let arena = &self.arena;
        self.ty.get(r) == Some(&n.ty)
            && self.state.get(r) == Some(&n.state)
            && self.cost.get(r).map(|c| c.to_bits()) == Some(n.cost.to_bits())
            && self.creation_ts.get(r) == Some(&n.creation_ts)
            && self.tags.get(r).is_some_and(|t| t.get(arena) == n.tags.get(buf))
            && self.props.get(r).is_some_and(|p| p.get(arena) == n.props.get(buf))
    }

    /// Gives rows found with the content they hold under another content
    /// hash ([`Sift::Rehashed`]) that hash: nothing else of them changes.
    pub fn rehash(&mut self, rows: &[(u32, u64)]) {
        let len = self.content.len();
        let content = self.content.to_mut();
        for &(r, hash) in rows {
            if (r as usize) < len {
                content[r as usize] = hash;
            }
        }
    }

    /// Marks `rows`, found unchanged by [`NodeShard::sift_row`], as
    /// reported by `scan`: all an upsert of them would do.
    pub fn seen_unchanged(&mut self, rows: &[u32], scan: u32) {
        let len = self.seen.len();
        let seen = self.seen.to_mut();
        for &r in rows {
            if (r as usize) < len {
                seen[r as usize] = scan;
            }
        }
    }

    /// The row keyed like `n`, its id read from `buf` (from the arena when
    /// `None`: a row adopted into it): found, or the number of a new row
    /// (the next one), already in the index.
    fn slot(&mut self, n: &BatchNode, buf: Option<&[u8]>) -> Slot {
        let (keys, ids, arena) = (&self.key, &self.id, &self.arena);
        let id = n.id.get(buf.unwrap_or(arena));
        let entry = self.index.entry(
            n.hash,
            |&r| keyed(keys, ids, arena, r, &n.syms, id),
            |&r| row_hash(keys, ids, arena, r as usize),
        );
        match entry {
            hashbrown::hash_table::Entry::Occupied(e) => Slot::Found(*e.get()),
            hashbrown::hash_table::Entry::Vacant(v) => {
                let row = keys.len() as u32;
                v.insert(row);
                Slot::New(row)
            }
        }
    }

    /// Takes the rows a scan staged for this shard while it is still empty
    /// (no row, no arena byte): `staged`'s buffer, written as blobs
    /// ([`super::staging`]), becomes the arena as it is, its rows' spans
    /// pointing into it already, so no byte is copied (an eighth more room
    /// is made for the waste reasons the analysis writes next, as
    /// [`super::Graph::ingest_nodes`] does). A key staged twice updates its
    /// first row, as a second upsert would; its first bytes stay in the
    /// arena unused, as an update leaves them.
    pub fn adopt(&mut self, staged: NodeBatch, now_us: u64, scan: u32) -> IngestStats {
        debug_assert!(self.is_empty() && self.arena.is_empty());
        let mut stats = IngestStats::default();
        let NodeBatch { rows, buf, .. } = staged;
        self.arena = Col::from(buf);
        // Staging may have left far more room than that.
        let room = self.arena.len() / 8;
        self.arena.shrink_to(self.arena.len() + room);
        self.reserve(rows.len(), room);
        for n in &rows {
            let blobs = (At::before(n.id), At::before(n.tags), At::before(n.props));
            debug_assert_eq!(
                blobs.2.get(&self.arena),
                n.props.get(&self.arena),
                "a staged row not written as blobs"
            );
            match self.slot(n, None) {
                Slot::Found(row) => {
                    let outcome = self.seen_again(row, n, None, scan);
                    if let Some(outcome) = outcome {
                        self.rewrite(row, n, (blobs.1, blobs.2), now_us, outcome);
                    }
                    stats.add(outcome.unwrap_or(Upsert::Unchanged));
                }
                Slot::New(_) => {
                    self.push_new(n, blobs, now_us, scan);
                    stats.add(Upsert::Inserted);
                }
            }
        }
        stats
    }

    /// Marks a found row seen by `scan`: how an upsert of `n` (its bytes
    /// in `buf`, or in the arena when `None`) changes it, `None` when it
    /// does not. A row holding `n`'s content under another content hash
    /// takes `n`'s hash and is otherwise left as it is.
    fn seen_again(&mut self, row: u32, n: &BatchNode, buf: Option<&[u8]>, scan: u32) -> Option<Upsert> {
        let r = row as usize;
        self.seen[r] = scan;
        if self.valid_to[r] != 0 {
            return Some(Upsert::Revived);
        }
        if self.content[r] == n.content {
            return None;
        }
        if self.same_content(r, n, buf.unwrap_or(&self.arena)) {
            self.content[r] = n.content;
            return None;
        }
        Some(Upsert::Changed)
    }

    /// Rewrites a found row's discovered fields from `n`, its tags and
    /// properties at `spans` of the arena.
    fn rewrite(&mut self, row: u32, n: &BatchNode, (tags, props): (At, At), now_us: u64, outcome: Upsert) {
        let r = row as usize;
        self.ty[r] = n.ty;
        self.state[r] = n.state;
        self.cost[r] = n.cost;
        self.creation_ts[r] = n.creation_ts;
        self.valid_from[r] = now_us;
        self.valid_to[r] = 0;
        self.tags[r] = tags;
        self.props[r] = props;
        self.content[r] = n.content;
        self.mark_dirty(row);
        if outcome == Upsert::Revived {
            self.touched.mark(row, self.len());
        }
        self.changed.mark(row, self.len());
    }

    /// Appends a new row from `n`, whose id, tags and properties are
    /// already in the arena at `blobs` (the index already holds it), as changed.
    fn push_new(&mut self, n: &BatchNode, blobs: (At, At, At), now_us: u64, scan: u32) {
        let row = self.len() as u32;
        self.push_columns(n, blobs, now_us, scan);
        self.mark_dirty(row);
        self.changed.mark(row, self.len());
    }

    /// Appends `n` to every column, first seen at `now_us` by `scan`, with
    /// nothing the analysis writes yet.
    fn push_columns(&mut self, n: &BatchNode, (id, tags, props): (At, At, At), now_us: u64, scan: u32) {
        let row = self.len();
        self.key.push(n.syms);
        self.id.push(id);
        self.ty.push(n.ty);
        self.state.push(n.state);
        self.cost.push(n.cost);
        self.creation_ts.push(n.creation_ts);
        self.valid_from.push(now_us);
        self.valid_to.push(0);
        self.waste.set(row, false);
        self.waste_reason.push(At::EMPTY);
        self.risk.push(0.0);
        self.reach.push(Reachability::Unknown);
        self.phase.push(Phase::None);
        self.verdict.push(None);
        self.tags.push(tags);
        self.props.push(props);
        self.content.push(n.content);
        self.seen.push(scan);
    }

    /// Loads a stored row as it is; used when hydrating from the store.
    pub fn load(&mut self, hash: u64, n: &NodeRow) -> u32 {
        let row = match self.find(hash, &n.key, n.id.as_bytes()) {
            Some(row) => row,
            None => self.push_row(hash, n.key, n.id.as_bytes()),
        };
        let r = row as usize;
        self.set_fields(r, &NodeFields::of(n));
        self.content[r] = content_hash(n.ty, n.state, n.cost_usd_mo, n.creation_ts, &n.tags, &n.props);
        self.touched.mark(row, self.len());
        self.changed.mark(row, self.len());
        row
    }

    /// Logically deletes a row at `now_us`; returns whether it was active.
    pub fn retire(&mut self, row: u32, now_us: u64) -> bool {
        let r = row as usize;
        if self.valid_to[r] != 0 {
            return false;
        }
        self.valid_to[r] = now_us;
        self.mark_dirty(row);
        self.touched.mark(row, self.len());
        self.changed.mark(row, self.len());
        true
    }

    /// Sets the verdict of a row (waste or not, why, the rule that
    /// decided); marks it changed when anything differs.
    pub fn set_verdict(&mut self, row: u32, v: &Verdict<'_>, now_us: u64) -> bool {
        let r = row as usize;
        if self.waste.get(r) == v.is_waste
            && self.verdict[r] == v.rule
            && self.waste_reason[r].get_str(&self.arena) == v.reason
        {
            return false;
        }
        self.waste.set(r, v.is_waste);
        self.waste_reason[r] = push_blob(self.arena.to_mut(), v.reason.as_bytes());
        self.verdict[r] = v.rule;
        self.valid_from[r] = now_us;
        self.mark_dirty(row);
        true
    }

    /// Sets the reachability and removal risk of a row (formal
    /// verification); marks it changed when either differs.
    pub fn set_assessment(&mut self, row: u32, reach: Reachability, risk: f32, now_us: u64) -> bool {
        let r = row as usize;
        if self.reach[r] == reach && self.risk[r].to_bits() == risk.to_bits() {
            return false;
        }
        self.reach[r] = reach;
        self.risk[r] = risk;
        self.valid_from[r] = now_us;
        self.mark_dirty(row);
        true
    }

    /// Sets the remediation stage of a row; marks it changed when it differs.
    pub fn set_phase(&mut self, row: u32, phase: Phase, now_us: u64) -> bool {
        let r = row as usize;
        if self.phase[r] == phase {
            return false;
        }
        self.phase[r] = phase;
        self.valid_from[r] = now_us;
        self.mark_dirty(row);
        true
    }

    /// Owned copy of a row.
    pub fn row(&self, row: u32) -> NodeRow {
        self.fields(row).to_row()
    }

    pub fn shrink(&mut self) {
        self.shrink_columns();
        self.content.shrink_to_fit();
        self.seen.shrink_to_fit();
        self.arena.shrink_to_fit();
        self.dirty.shrink_to_fit();
        let (keys, ids, arena) = (&self.key, &self.id, &self.arena);
        self.index.shrink_to_fit(|&r| row_hash(keys, ids, arena, r as usize));
    }

    /// The shard of rows `keep` (ascending old row numbers), renumbered
    /// from 0 in that order under the next generation, with an arena of
    /// only their bytes: what a compaction leaves. Rows still to be
    /// committed stay dirty; every row counts as touched and changed.
    pub fn compacted(&self, keep: &[u32]) -> NodeShard {
        let mut out = NodeShard {
            generation: next_generation(self.generation),
            ..NodeShard::default()
        };
        let bytes: usize = keep
            .iter()
            .map(|&r| {
                let r = r as usize;
                let a = &self.arena;
                self.id[r].len(a) + self.tags[r].len(a) + self.props[r].len(a) + self.waste_reason[r].len(a) + 4
            })
            .sum();
        out.reserve(keep.len(), bytes);
        for &old in keep {
            let o = old as usize;
            let row = out.push_row(self.key_hash(o), self.key[o], self.id[o].get(&self.arena));
            let r = row as usize;
            out.set_fields(r, &self.fields(old));
            out.content[r] = self.content[o];
            out.seen[r] = self.seen[o];
            if self.dirty_set.get(o) {
                out.mark_dirty(row);
            }
        }
        out.touched = Touched::overflowed();
        out.changed = Touched::overflowed();
        out
    }

    pub fn heap_bytes(&self) -> usize {
        fn v<T>(x: &Vec<T>) -> usize {
            x.capacity() * std::mem::size_of::<T>()
        }
        self.columns_heap_bytes()
            + self.content.heap_bytes()
            + self.seen.heap_bytes()
            + self.arena.heap_bytes()
            + v(&self.dirty)
            + self.dirty_set.heap_bytes()
            + self.touched.heap_bytes()
            + self.changed.heap_bytes()
            + self.index.capacity() * (std::mem::size_of::<u32>() + 1)
    }
}

/// What one apply of edges to an edge shard carries from edge to edge.
/// The properties it has written, so that edges with the same ones (one
/// relation string, mostly) keep a single copy in its arena: a
/// direct-mapped table of 32 places by a hash of the bytes, each the last
/// properties that fell on it and where the arena holds them (a plugin's
/// edges name a few dozen relations at most). And the row after the last
/// edge found or written, where the next is looked for first: a later scan
/// reports a shard's edges in about the order the one before did.
#[derive(Default)]
pub struct HeldProps {
    places: [(u64, At); 32],
    next: u32,
}

impl HeldProps {
    /// Where `arena` holds `props`: the span written for the same bytes
    /// before, or a copy appended now (and remembered).
    fn keep(&mut self, arena: &mut Vec<u8>, props: &[u8]) -> At {
        let mut h = FxHasher::default();
        h.write(props);
        // Never 0, the hash of the empty places.
        let hash = h.finish() | 1;
        let place = &mut self.places[(hash >> 59) as usize];
        if place.0 == hash && place.1.get(arena) == props {
            return place.1;
        }
        let at = push_blob(arena, props);
        *place = (hash, at);
        at
    }
}

/// The edge shard and its row-wide operations, from [`crate::edge_schema!`].
macro_rules! edge_shard {
    ($($(#[$doc:meta])* $field:ident / $col:ident : $kind:ident = $name:literal,)*) => {
        /// One edge shard, holding the edges whose source lives in node
        /// shards `i`, `i + 128`: their endpoints and a column for each
        /// field of the schema, aligned by row. Deletion is logical; rows
        /// move only in a compaction.
        #[derive(Default)]
        pub struct EdgeShard {
            pub src: Col<NodeSlot>,
            pub dst: Col<NodeSlot>,
            $($(#[$doc])* pub $col: <schema::$kind as Kind>::Column,)*
            /// The scan that last reported the row.
            pub seen: Col<u32>,
            pub arena: Col<u8>,
            pub index: HashTable<u32>,
            pub dirty: Vec<u32>,
            pub dirty_set: BitSet,
            /// Rows inserted, revived, retired or loaded since the adjacency index
            /// was built (unlike `dirty`, not cleared by a commit).
            pub touched: Touched,
            /// Rows inserted, changed, revived, retired or loaded since the last
            /// [`super::Graph::take_row_changes`].
            pub changed: Touched,
        }

        impl EdgeShard {
            /// A row's fields but its endpoints, borrowed.
            pub fn fields(&self, row: u32) -> EdgeFields<'_> {
                let r = row as usize;
                EdgeFields {
                    $($field: <schema::$kind as Kind>::get(&self.$col, &self.arena, r),)*
                }
            }

            fn reserve_columns(&mut self, rows: usize) {
                $(<schema::$kind as Kind>::reserve(&mut self.$col, rows);)*
            }

            fn shrink_columns(&mut self) {
                $(<schema::$kind as Kind>::shrink(&mut self.$col);)*
            }

            fn columns_heap_bytes(&self) -> usize {
                0 $(+ <schema::$kind as Kind>::heap_bytes(&self.$col))*
            }
        }
    };
}

crate::edge_schema!(edge_shard);

impl EdgeShard {
    /// Starts loading row `r`'s relation and ends.
    pub fn prefetch_row(&self, r: usize) {
        if r < self.rel.len() {
            prefetch(&self.rel[r]);
            prefetch(&self.dst[r]);
            prefetch(&self.src[r]);
        }
    }
}

pub fn edge_hash(src: NodeSlot, dst: NodeSlot, rel: Relation) -> u64 {
    let mut h = FxHasher::default();
    h.write_u64(u64::from(src.raw()) | u64::from(dst.raw()) << 32);
    h.write_u8(rel as u8);
    fmix64(h.finish())
}

impl EdgeShard {
    pub fn len(&self) -> usize {
        self.src.len()
    }

    /// Room for `rows` more edges and `bytes` more of their properties, so
    /// a first ingest sizes each column once instead of doubling it.
    pub fn reserve(&mut self, rows: usize, bytes: usize) {
        self.src.reserve(rows);
        self.dst.reserve(rows);
        self.reserve_columns(rows);
        self.seen.reserve(rows);
        self.dirty.reserve(rows);
        self.arena.reserve(bytes);
        let (s, d, rl) = (&self.src, &self.dst, &self.rel);
        self.index.reserve(rows, |&r| {
            let r = r as usize;
            edge_hash(s[r], d[r], rl[r])
        });
    }

    pub fn is_empty(&self) -> bool {
        self.src.is_empty()
    }

    /// Rebuilds the endpoint index (after loading columns).
    pub fn rebuild_index(&mut self) {
        let mut index = HashTable::with_capacity(self.src.len());
        let (s, d, rl) = (&self.src, &self.dst, &self.rel);
        for r in 0..s.len() {
            index.insert_unique(edge_hash(s[r], d[r], rl[r]), r as u32, |&x| {
                let x = x as usize;
                edge_hash(s[x], d[x], rl[x])
            });
        }
        self.index = index;
    }

    pub fn find(&self, src: NodeId, dst: NodeId, rel: Relation) -> Option<u32> {
        self.find_slots(NodeSlot::of(src), NodeSlot::of(dst), rel)
    }

    /// [`EdgeShard::find_slots`], trying row `guess` first (an edge has
    /// one row in its shard, so a guess that names it is its row).
    #[inline]
    fn find_at(&self, src: NodeSlot, dst: NodeSlot, rel: Relation, guess: u32) -> Option<u32> {
        let g = guess as usize;
        if self.src.get(g) == Some(&src) && self.dst.get(g) == Some(&dst) && self.rel.get(g) == Some(&rel) {
            return Some(guess);
        }
        self.find_slots(src, dst, rel)
    }

    fn find_slots(&self, src: NodeSlot, dst: NodeSlot, rel: Relation) -> Option<u32> {
        let h = edge_hash(src, dst, rel);
        self.index
            .find(h, |&r| {
                let r = r as usize;
                self.src[r] == src && self.dst[r] == dst && self.rel[r] == rel
            })
            .copied()
    }

    fn mark_dirty(&mut self, row: u32) {
        if self.dirty_set.insert(row as usize) {
            self.dirty.push(row);
        }
    }

    pub fn take_dirty(&mut self) -> Vec<u32> {
        self.dirty_set.clear();
        std::mem::take(&mut self.dirty)
    }

    /// Inserts or refreshes an edge; `loaded` carries stored validity when
    /// hydrating. A row written takes the span `held` knows for the same
    /// properties, when it knows one, instead of a copy of its own: pass
    /// the same `held` for every edge a shard takes in one apply.
    #[allow(clippy::too_many_arguments)]
    pub fn upsert(
        &mut self,
        src: NodeId,
        dst: NodeId,
        rel: Relation,
        inferred: bool,
        props: &[u8],
        held: &mut HeldProps,
        now_us: u64,
        scan: u32,
        loaded: Option<(u64, u64)>,
    ) -> Upsert {
        let (src, dst) = (NodeSlot::of(src), NodeSlot::of(dst));
        let (row, outcome) = match self.find_at(src, dst, rel, held.next) {
            Some(row) => {
                held.next = row.wrapping_add(1);
                let r = row as usize;
                self.seen[r] = scan;
                let revived = self.valid_to[r] != 0;
                let same = self.inferred.get(r) == inferred && self.props[r].get(&self.arena) == props;
                if loaded.is_none() && !revived && same {
                    return Upsert::Unchanged;
                }
                (row, if revived { Upsert::Revived } else { Upsert::Changed })
            }
            None => {
                let row = self.src.len() as u32;
                let h = edge_hash(src, dst, rel);
                self.src.push(src);
                self.dst.push(dst);
                self.rel.push(rel);
                self.valid_from.push(0);
                self.valid_to.push(0);
                self.props.push(At::EMPTY);
                self.seen.push(0);
                let (s, d, rl) = (&self.src, &self.dst, &self.rel);
                self.index.insert_unique(h, row, |&r| {
                    let r = r as usize;
                    edge_hash(s[r], d[r], rl[r])
                });
                (row, Upsert::Inserted)
            }
        };
        let r = row as usize;
        self.inferred.set(r, inferred);
        self.props[r] = held.keep(self.arena.to_mut(), props);
        self.seen[r] = scan;
        // A changed row that stays visible keeps its place in the index.
        let visibility = loaded.is_some() || outcome != Upsert::Changed;
        match loaded {
            Some((from, to)) => {
                self.valid_from[r] = from;
                self.valid_to[r] = to;
            }
            None => {
                self.valid_from[r] = now_us;
                self.valid_to[r] = 0;
                self.mark_dirty(row);
            }
        }
        if visibility {
            self.touched.mark(row, self.src.len());
        }
        self.changed.mark(row, self.src.len());
        outcome
    }

    pub fn retire(&mut self, row: u32, now_us: u64) -> bool {
        let r = row as usize;
        if self.valid_to[r] != 0 {
            return false;
        }
        self.valid_to[r] = now_us;
        self.mark_dirty(row);
        self.touched.mark(row, self.src.len());
        self.changed.mark(row, self.src.len());
        true
    }

    /// The shard of rows `keep` (ascending old row numbers), renumbered
    /// from 0 in that order, their endpoints renamed by `rename`, with an
    /// arena of only their properties: what a compaction leaves. Rows
    /// still to be committed stay dirty; every row counts as touched and
    /// changed.
    pub fn compacted(&self, keep: &[u32], rename: impl Fn(NodeSlot) -> NodeSlot) -> EdgeShard {
        let mut out = EdgeShard::default();
        let bytes: usize = keep.iter().map(|&r| self.props[r as usize].len(&self.arena) + 1).sum();
        out.reserve(keep.len(), bytes);
        let mut held = HeldProps::default();
        for &old in keep {
            let o = old as usize;
            let row = out.src.len() as u32;
            let r = row as usize;
            out.src.push(rename(self.src[o]));
            out.dst.push(rename(self.dst[o]));
            out.rel.push(self.rel[o]);
            out.inferred.set(r, self.inferred.get(o));
            out.valid_from.push(self.valid_from[o]);
            out.valid_to.push(self.valid_to[o]);
            out.props
                .push(held.keep(out.arena.to_mut(), self.props[o].get(&self.arena)));
            out.seen.push(self.seen[o]);
            if self.dirty_set.get(o) {
                out.mark_dirty(row);
            }
        }
        out.rebuild_index();
        out.touched = Touched::overflowed();
        out.changed = Touched::overflowed();
        out
    }

    /// Renames every endpoint by `rename` in place (rows keep their
    /// numbers); the index is built again, every row counts as touched
    /// and changed.
    pub fn rename_endpoints(&mut self, rename: impl Fn(NodeSlot) -> NodeSlot) {
        for id in self.src.iter_mut().chain(self.dst.iter_mut()) {
            *id = rename(*id);
        }
        self.rebuild_index();
        self.touched = Touched::overflowed();
        self.changed = Touched::overflowed();
    }

    pub fn shrink(&mut self) {
        self.src.shrink_to_fit();
        self.dst.shrink_to_fit();
        self.shrink_columns();
        self.seen.shrink_to_fit();
        self.arena.shrink_to_fit();
        let (s, d, rl) = (&self.src, &self.dst, &self.rel);
        self.index.shrink_to_fit(|&r| {
            let r = r as usize;
            edge_hash(s[r], d[r], rl[r])
        });
    }

    pub fn heap_bytes(&self) -> usize {
        fn v<T>(x: &Vec<T>) -> usize {
            x.capacity() * std::mem::size_of::<T>()
        }
        self.src.heap_bytes()
            + self.dst.heap_bytes()
            + self.columns_heap_bytes()
            + self.seen.heap_bytes()
            + self.arena.heap_bytes()
            + v(&self.dirty)
            + self.dirty_set.heap_bytes()
            + self.touched.heap_bytes()
            + self.changed.heap_bytes()
            + self.index.capacity() * (std::mem::size_of::<u32>() + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: Span, tags: Span, props: Span) -> BatchNode {
        let sym = Sym::from_index(0);
        BatchNode {
            hash: 0,
            syms: [sym; 5],
            ty: sym,
            state: sym,
            cost: 0.0,
            creation_ts: 0,
            id,
            tags,
            props,
            content: 0,
        }
    }

    fn span(off: u32, len: u32) -> Span {
        Span { off, len }
    }

    /// A row's bytes land in the arena as blobs, an empty one taking no byte.
    #[test]
    fn row_bytes_land_as_blobs() {
        let buf = b"..idTTTTpppp..".to_vec();
        let mut arena = b"xyz".to_vec();
        let n = row(span(2, 2), span(4, 0), span(8, 4));
        let (id, tags, props) = push_row_bytes(&mut arena, &n, &buf);
        assert_eq!(
            (id.get(&arena), tags, props.get(&arena)),
            (&b"id"[..], At::EMPTY, &b"pppp"[..])
        );
        assert_eq!(arena.len(), 3 + 3 + 5);
    }

    /// A staged row's bytes land in another batch as blobs: each span
    /// reads its bytes, and the blob before it the same.
    #[test]
    fn staged_row_bytes_are_copied_as_blobs() {
        use super::super::staging::copy_row_bytes;
        let buf = b"..idTTTTpppp..".to_vec();
        let mut out = b"xyz".to_vec();
        for n in [
            row(span(2, 2), span(4, 4), span(8, 4)),
            row(span(2, 2), span(4, 0), span(4, 8)),
        ] {
            let before = out.len();
            let (id, tags, props) = copy_row_bytes(&mut out, &n, &buf);
            for (got, want) in [(id, n.id), (tags, n.tags), (props, n.props)] {
                assert_eq!(got.get(&out), want.get(&buf));
                assert_eq!(At::before(got).get(&out), want.get(&buf));
            }
            // A length byte before each blob but an empty one, which takes none.
            let stored = |s: Span| s.len as usize + usize::from(s.len > 0);
            assert_eq!(out.len() - before, stored(n.id) + stored(n.tags) + stored(n.props));
        }
        // Spans past the end of the batch copy nothing rather than panic.
        let (id, _, props) = copy_row_bytes(&mut out, &row(span(2, 2), span(4, 4), span(8, 40)), &buf);
        assert_eq!((id.get(&out), props.get(&out)), (&b"id"[..], &b""[..]));
        assert_eq!(At::before(props), At::EMPTY);
    }
}

//! Packed identifiers: interned symbols, node ids and edge ids.

use std::fmt;
use std::num::NonZeroU32;

/// Number of node shards; a node lives in shard `hash(crn) % NODE_SHARDS`.
pub const NODE_SHARDS: usize = 256;
/// Number of edge shards; an edge lives in the shard of its source node modulo this.
pub const EDGE_SHARDS: usize = 128;

/// An interned string. `Option<Sym>` is as small as `Sym`.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(transparent)]
pub struct Sym(NonZeroU32);

impl Sym {
    /// The symbol with the given zero-based table index.
    pub fn from_index(index: usize) -> Sym {
        let raw = u32::try_from(index + 1).expect("interner holds fewer than 2^32 strings");
        Sym(NonZeroU32::new(raw).expect("index + 1 is never zero"))
    }

    /// Zero-based position in the interner's table.
    pub fn index(self) -> usize {
        (self.0.get() - 1) as usize
    }

    pub const fn from_nonzero(n: NonZeroU32) -> Sym {
        Sym(n)
    }

    /// The raw value, stable across restarts because the table is persisted.
    pub fn to_raw(self) -> u32 {
        self.0.get()
    }

    /// Rebuilds a symbol from [`Sym::to_raw`]; `None` for zero.
    pub fn from_raw(raw: u32) -> Option<Sym> {
        NonZeroU32::new(raw).map(Sym)
    }
}

impl fmt::Debug for Sym {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sym({})", self.0)
    }
}

/// A node: shard (8 bits), row (32 bits) and shard generation (24 bits).
///
/// The generation changes only when a shard is compacted, so an id taken
/// before a compaction is recognisably stale.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(transparent)]
pub struct NodeId(u64);

impl NodeId {
    /// The largest shard generation an id can carry (24 bits).
    pub const MAX_GENERATION: u32 = 0xFF_FFFF;

    pub fn new(shard: usize, row: u32, generation: u32) -> NodeId {
        debug_assert!(shard < NODE_SHARDS);
        NodeId(
            ((u64::from(generation) & u64::from(Self::MAX_GENERATION)) << 40) | ((shard as u64) << 32) | u64::from(row),
        )
    }
    pub fn shard(self) -> usize {
        ((self.0 >> 32) & 0xFF) as usize
    }
    pub fn row(self) -> u32 {
        self.0 as u32
    }
    pub fn generation(self) -> u32 {
        (self.0 >> 40) as u32
    }
    pub fn to_raw(self) -> u64 {
        self.0
    }
    pub fn from_raw(raw: u64) -> NodeId {
        NodeId(raw)
    }
}

impl fmt::Debug for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NodeId({}/{}@{})", self.shard(), self.row(), self.generation())
    }
}

/// A node's shard (8 bits) and row (24 bits) in four bytes: an edge row's
/// endpoint. The generation is left out: it is the node shard's own, and a
/// compaction renames every endpoint into its shard's next generation.
#[derive(Copy, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(transparent)]
pub struct NodeSlot(u32);

impl NodeSlot {
    /// Rows a node shard can hold (2^24: 4.3 billion nodes over the shards;
    /// a shard's 32-bit arena offsets bind first).
    pub const MAX_ROWS: u32 = 1 << 24;

    pub fn new(shard: usize, row: u32) -> NodeSlot {
        debug_assert!(shard < NODE_SHARDS);
        debug_assert!(row < Self::MAX_ROWS, "node row {row} past a slot's 24 bits");
        NodeSlot(((shard as u32) << 24) | (row & (Self::MAX_ROWS - 1)))
    }
    pub fn of(id: NodeId) -> NodeSlot {
        NodeSlot::new(id.shard(), id.row())
    }
    pub fn shard(self) -> usize {
        (self.0 >> 24) as usize
    }
    pub fn row(self) -> u32 {
        self.0 & (Self::MAX_ROWS - 1)
    }
    pub fn raw(self) -> u32 {
        self.0
    }
    /// The node's id in its shard's `generation`.
    pub fn id(self, generation: u32) -> NodeId {
        NodeId::new(self.shard(), self.row(), generation)
    }
}

impl fmt::Debug for NodeSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NodeSlot({}/{})", self.shard(), self.row())
    }
}

/// An edge: edge shard (8 bits) and row (32 bits).
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EdgeId(u64);

impl EdgeId {
    pub fn new(shard: usize, row: u32) -> EdgeId {
        debug_assert!(shard < EDGE_SHARDS);
        EdgeId(((shard as u64) << 32) | u64::from(row))
    }
    pub fn shard(self) -> usize {
        (self.0 >> 32) as usize
    }
    pub fn row(self) -> u32 {
        self.0 as u32
    }
}

impl fmt::Debug for EdgeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EdgeId({}/{})", self.shard(), self.row())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_id_packs_and_unpacks() {
        let id = NodeId::new(255, u32::MAX, 0xAB_CDEF);
        assert_eq!(id.shard(), 255);
        assert_eq!(id.row(), u32::MAX);
        assert_eq!(id.generation(), 0xAB_CDEF);
        let id = NodeId::new(3, 7, 0);
        assert_eq!((id.shard(), id.row(), id.generation()), (3, 7, 0));
        assert_eq!(NodeId::from_raw(id.to_raw()), id);
    }

    #[test]
    fn node_slot_keeps_shard_and_row() {
        let id = NodeId::new(255, NodeSlot::MAX_ROWS - 1, 9);
        let slot = NodeSlot::of(id);
        assert_eq!((slot.shard(), slot.row()), (255, NodeSlot::MAX_ROWS - 1));
        assert_eq!(slot.id(9), id);
        assert_eq!(NodeSlot::of(NodeId::new(0, 0, 3)).id(3), NodeId::new(0, 0, 3));
    }

    #[test]
    fn sym_round_trips_raw() {
        let s = Sym::from_index(41);
        assert_eq!(s.index(), 41);
        assert_eq!(Sym::from_raw(s.to_raw()), Some(s));
        assert_eq!(Sym::from_raw(0), None);
        assert_eq!(std::mem::size_of::<Option<Sym>>(), 4);
    }
}

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
    fn sym_round_trips_raw() {
        let s = Sym::from_index(41);
        assert_eq!(s.index(), 41);
        assert_eq!(Sym::from_raw(s.to_raw()), Some(s));
        assert_eq!(Sym::from_raw(0), None);
        assert_eq!(std::mem::size_of::<Option<Sym>>(), 4);
    }
}

//! The node and edge schema, declared once.
//!
//! [`node_schema!`] and [`edge_schema!`] list every stored field of a node
//! and of an edge, in stored order: its name in the row types, its column
//! in the shard, its [`Kind`] and the name a malformed value is reported
//! by. Everything that handles a whole row is generated from them: the
//! owned rows ([`NodeRow`], [`EdgeVersion`]), the borrowed ones
//! ([`NodeFields`], [`EdgeFields`]), the shards' schema columns and their
//! row reads, loads, sizing and accounting (`shard.rs`), the store's codec
//! and its snapshot sections (`svc_store::codec`, `svc_store::snapshot`),
//! and the API's node view. A field is added in one line here and its
//! value for a new row in `NodeShard::push_columns` (a column left short
//! fails the first test that reads a row); a new kind also needs its
//! stored forms (`svc_store`'s `kinds`). Adding a stored field changes the
//! stored formats: their version bytes go up (docs/formats.md).
//!
//! The macros take the name of a `macro_rules!` callback in scope at the
//! call and hand it the list. A node's list comes in two groups: the
//! `identity` (key and physical id: how a row is found, written once when
//! it is created) and the `fields` (everything a version changes).

use std::fmt::Debug;

use super::col::Col;
use super::mem::{At, BitSet, push_blob};
use crate::ids::Sym;
use crate::relation::Relation;

/// Every field of a node version, in stored order, handed to `$then`:
/// `field / column: Kind = "name",` in two groups, `identity { .. }` and
/// `fields { .. }`.
#[macro_export]
macro_rules! node_schema {
    ($then:ident) => {
        $then! {
            identity {
                /// provider, region, service, kind, account.
                key / key: Key = "key",
                /// The provider's physical id.
                id / id: Text = "id",
            }
            fields {
                /// `<service>:<kind>`.
                ty / ty: Symbol = "type",
                state / state: Symbol = "state",
                cost_usd_mo / cost: F32 = "cost",
                /// Unix seconds.
                creation_ts / creation_ts: U64 = "creation_ts",
                /// Microseconds since the epoch.
                valid_from / valid_from: U64 = "valid_from",
                /// Microseconds since the epoch; 0 while visible.
                valid_to / valid_to: U64 = "valid_to",
                is_waste / waste: Flag = "is_waste",
                waste_reason / waste_reason: Text = "waste_reason",
                risk_score / risk: F32 = "risk_score",
                reachability / reach: Reach = "reachability",
                phase / phase: Stage = "phase",
                /// The rule that decided the waste verdict, if one did.
                verdict / verdict: MaybeSymbol = "verdict",
                /// The tags' encoded list ([`crate::props::Tags`]).
                tags / tags: Bytes = "tags",
                /// The properties' encoded list ([`crate::props::Props`]).
                props / props: Bytes = "props",
            }
        }
    };
}

/// Every field of an edge version but its endpoints (CRNs in a stored
/// version, node ids in a shard), in stored order, handed to `$then`:
/// `field / column: Kind = "name",`.
#[macro_export]
macro_rules! edge_schema {
    ($then:ident) => {
        $then! {
            relation / rel: Rel = "relation",
            /// Added by the ghost linker rather than reported by a source.
            inferred / inferred: Flag = "inferred",
            /// Microseconds since the epoch.
            valid_from / valid_from: U64 = "valid_from",
            /// Microseconds since the epoch; 0 while visible.
            valid_to / valid_to: U64 = "valid_to",
            /// The properties' encoded list ([`crate::props::Props`]).
            props / props: Bytes = "props",
        }
    };
}

/// How a field is held: owned in a row, borrowed from a row or a shard,
/// and as a shard column whose bytes, if any, live in the shard's arena.
pub trait Kind {
    type Owned: Clone + Debug + PartialEq;
    type Ref<'a>: Copy;
    type Column: Default;
    fn borrow(v: &Self::Owned) -> Self::Ref<'_>;
    /// An owned copy (text that is not UTF-8, which no arena holds, reads as empty).
    fn own(v: Self::Ref<'_>) -> Self::Owned;
    /// Row `r` of a column.
    fn get<'a>(c: &'a Self::Column, arena: &'a [u8], r: usize) -> Self::Ref<'a>;
    /// Overwrites row `r` of a column, its bytes appended to `arena`.
    fn set(c: &mut Self::Column, arena: &mut Col<u8>, r: usize, v: Self::Ref<'_>);
    fn reserve(c: &mut Self::Column, rows: usize);
    fn shrink(c: &mut Self::Column);
    fn heap_bytes(c: &Self::Column) -> usize;
}

/// Kinds held as themselves, one value a row in a [`Col`].
macro_rules! plain_kinds {
    ($($(#[$doc:meta])* $kind:ident = $t:ty;)*) => {$(
        $(#[$doc])*
        pub struct $kind;

        impl Kind for $kind {
            type Owned = $t;
            type Ref<'a> = $t;
            type Column = Col<$t>;
            #[inline]
            fn borrow(v: &$t) -> $t {
                *v
            }
            #[inline]
            fn own(v: $t) -> $t {
                v
            }
            #[inline]
            fn get(c: &Col<$t>, _: &[u8], r: usize) -> $t {
                c[r]
            }
            #[inline]
            fn set(c: &mut Col<$t>, _: &mut Col<u8>, r: usize, v: $t) {
                c[r] = v;
            }
            fn reserve(c: &mut Col<$t>, rows: usize) {
                c.reserve(rows);
            }
            fn shrink(c: &mut Col<$t>) {
                c.shrink_to_fit();
            }
            fn heap_bytes(c: &Col<$t>) -> usize {
                c.heap_bytes()
            }
        }
    )*};
}

plain_kinds! {
    /// A node's key: five symbols.
    Key = [Sym; 5];
    Symbol = Sym;
    MaybeSymbol = Option<Sym>;
    F32 = f32;
    U64 = u64;
    Reach = Reachability;
    Stage = Phase;
    Rel = Relation;
}

/// Bytes in the arena, a blob ([`At`]) a row.
macro_rules! arena_kinds {
    ($($(#[$doc:meta])* $kind:ident = $owned:ty, |$b:ident| $own:expr;)*) => {$(
        $(#[$doc])*
        pub struct $kind;

        impl Kind for $kind {
            type Owned = $owned;
            type Ref<'a> = &'a [u8];
            type Column = Col<At>;
            #[inline]
            fn borrow(v: &$owned) -> &[u8] {
                v.as_ref()
            }
            #[inline]
            fn own($b: &[u8]) -> $owned {
                $own
            }
            #[inline]
            fn get<'a>(c: &'a Col<At>, arena: &'a [u8], r: usize) -> &'a [u8] {
                c[r].get(arena)
            }
            #[inline]
            fn set(c: &mut Col<At>, arena: &mut Col<u8>, r: usize, v: &[u8]) {
                c[r] = push_blob(arena.to_mut(), v);
            }
            fn reserve(c: &mut Col<At>, rows: usize) {
                c.reserve(rows);
            }
            fn shrink(c: &mut Col<At>) {
                c.shrink_to_fit();
            }
            fn heap_bytes(c: &Col<At>) -> usize {
                c.heap_bytes()
            }
        }
    )*};
}

arena_kinds! {
    /// UTF-8 text.
    Text = String, |b| std::str::from_utf8(b).unwrap_or("").to_owned();
    Bytes = Vec<u8>, |b| b.to_vec();
}

/// A flag, one bit a row.
pub struct Flag;

impl Kind for Flag {
    type Owned = bool;
    type Ref<'a> = bool;
    type Column = BitSet;
    #[inline]
    fn borrow(v: &bool) -> bool {
        *v
    }
    #[inline]
    fn own(v: bool) -> bool {
        v
    }
    #[inline]
    fn get(c: &BitSet, _: &[u8], r: usize) -> bool {
        c.get(r)
    }
    #[inline]
    fn set(c: &mut BitSet, _: &mut Col<u8>, r: usize, v: bool) {
        c.set(r, v);
    }
    fn reserve(_: &mut BitSet, _: usize) {}
    fn shrink(_: &mut BitSet) {}
    fn heap_bytes(c: &BitSet) -> usize {
        c.heap_bytes()
    }
}

/// Reachability from the estate's entry points (formal verification).
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
#[repr(u8)]
pub enum Reachability {
    #[default]
    Unknown = 0,
    Reachable = 1,
    Unreachable = 2,
}

impl Reachability {
    pub fn name(self) -> &'static str {
        match self {
            Reachability::Unknown => "unknown",
            Reachability::Reachable => "reachable",
            Reachability::Unreachable => "unreachable",
        }
    }
    pub fn from_u8(v: u8) -> Reachability {
        match v {
            1 => Reachability::Reachable,
            2 => Reachability::Unreachable,
            _ => Reachability::Unknown,
        }
    }
}

/// Remediation pipeline stage (SPEC 3.1); `None` before a node is flagged.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
#[repr(u8)]
pub enum Phase {
    #[default]
    None = 0,
    Flagged = 1,
    Analyzed = 2,
    Codegen = 3,
    SauGate = 4,
    Pending = 5,
    Applied = 6,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::None => "",
            Phase::Flagged => "flagged",
            Phase::Analyzed => "analyzed",
            Phase::Codegen => "codegen",
            Phase::SauGate => "sau_gate",
            Phase::Pending => "pending",
            Phase::Applied => "applied",
        }
    }
    pub fn from_u8(v: u8) -> Phase {
        match v {
            1 => Phase::Flagged,
            2 => Phase::Analyzed,
            3 => Phase::Codegen,
            4 => Phase::SauGate,
            5 => Phase::Pending,
            6 => Phase::Applied,
            _ => Phase::None,
        }
    }
}

/// The node row types from [`node_schema!`].
macro_rules! node_rows {
    (
        identity { $($(#[$idoc:meta])* $ifield:ident / $icol:ident : $ikind:ident = $iname:literal,)* }
        fields { $($(#[$doc:meta])* $field:ident / $col:ident : $kind:ident = $name:literal,)* }
    ) => {
        /// Everything a node version holds, owned: a version read from the
        /// store, or a row copied out of a shard.
        #[derive(Clone, Debug, PartialEq)]
        pub struct NodeRow {
            $($(#[$idoc])* pub $ifield: <$ikind as Kind>::Owned,)*
            $($(#[$doc])* pub $field: <$kind as Kind>::Owned,)*
        }

        /// A node version's fields, borrowed from an owned [`NodeRow`] or
        /// straight from a shard's columns: the one shape in which a node
        /// is handed to the stores and the API, encoded the same either way.
        #[derive(Copy, Clone, Debug)]
        pub struct NodeFields<'a> {
            $($(#[$idoc])* pub $ifield: <$ikind as Kind>::Ref<'a>,)*
            $($(#[$doc])* pub $field: <$kind as Kind>::Ref<'a>,)*
        }

        impl<'a> NodeFields<'a> {
            pub fn of(n: &'a NodeRow) -> NodeFields<'a> {
                NodeFields {
                    $($ifield: <$ikind as Kind>::borrow(&n.$ifield),)*
                    $($field: <$kind as Kind>::borrow(&n.$field),)*
                }
            }

            /// An owned copy.
            pub fn to_row(&self) -> NodeRow {
                NodeRow {
                    $($ifield: <$ikind as Kind>::own(self.$ifield),)*
                    $($field: <$kind as Kind>::own(self.$field),)*
                }
            }
        }
    };
}

node_schema!(node_rows);

/// The edge row types from [`edge_schema!`].
macro_rules! edge_rows {
    ($($(#[$doc:meta])* $field:ident / $col:ident : $kind:ident = $name:literal,)*) => {
        /// One edge version, owned, its endpoints named by CRN: as written
        /// to and read from the temporal store.
        #[derive(Clone, Debug, PartialEq)]
        pub struct EdgeVersion {
            pub src: String,
            pub dst: String,
            $($(#[$doc])* pub $field: <$kind as Kind>::Owned,)*
        }

        /// An edge version's fields but its endpoints, borrowed from an
        /// [`EdgeVersion`] or straight from a shard's columns.
        #[derive(Copy, Clone, Debug)]
        pub struct EdgeFields<'a> {
            $($(#[$doc])* pub $field: <$kind as Kind>::Ref<'a>,)*
        }

        impl<'a> EdgeFields<'a> {
            pub fn of(e: &'a EdgeVersion) -> EdgeFields<'a> {
                EdgeFields {
                    $($field: <$kind as Kind>::borrow(&e.$field),)*
                }
            }

            /// An owned copy between `src` and `dst`.
            pub fn to_version(&self, src: String, dst: String) -> EdgeVersion {
                EdgeVersion {
                    src,
                    dst,
                    $($field: <$kind as Kind>::own(self.$field),)*
                }
            }
        }
    };
}

edge_schema!(edge_rows);

super::col::plain_u8_enum! {
    Reachability = Reachability::Unreachable;
    Phase = Phase::Applied;
}

//! svc-graph: the graph core of svc.
//!
//! Owns the identifiers ([`ids`]), the string interner ([`intern`]), CRN
//! parsing ([`crn`]), relations ([`relation`]), node properties
//! ([`props`]), the columnar graph ([`graph`]) with its node and edge
//! shards, adjacency and views, blast radius ([`blast`]), and the port
//! through which the outside world feeds a scan ([`source`], [`stage`]).
//! It does no file or network I/O and depends on no async, network or
//! serialization crate.

pub mod blast;
pub mod clock;
pub mod crn;
pub mod graph;
pub mod ids;
pub mod intern;
pub mod malloc;
pub mod props;
pub mod relation;
pub mod source;
pub mod stage;
pub mod sync;

#[cfg(any(test, feature = "test-support"))]
pub mod fixture;

pub use crn::{Crn, CrnError, CrnRef};
pub use graph::Graph;
pub use ids::{EdgeId, NodeId, NodeSlot, Sym};
pub use intern::Interner;
pub use relation::Relation;

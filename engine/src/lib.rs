//! svc-engine: the core of svc.
//!
//! Owns the identifiers ([`ids`]), the string interner ([`intern`]), CRN parsing
//! ([`crn`]), the columnar graph ([`graph`]) with its node and edge shards, the
//! temporal graph store and the audit ledger ([`store`]), the scan pipeline
//! ([`scan`]) and the cost signals it records ([`signal`]). It does no network I/O and knows nothing of tokio, tonic, axum
//! or JSON wire shapes: boundary crates convert.

pub mod analysis;
pub mod blast;
pub mod clock;
pub mod crn;
pub mod engine;
pub mod fbs;
pub mod graph;
pub mod heuristics;
pub mod ids;
pub mod intern;
pub mod malloc;
pub mod policy;
pub mod prices;
pub mod props;
pub mod relation;
pub mod remediation;
pub mod scan;
pub mod signal;
pub mod store;

pub use crn::{Crn, CrnError, CrnRef};
pub use engine::{Engine, EngineError, ScanPermit};
pub use graph::Graph;
pub use ids::{EdgeId, NodeId, Sym};
pub use intern::Interner;
pub use relation::Relation;

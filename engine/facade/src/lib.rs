//! svc-engine: the facade that composes the engine's subsystems.
//!
//! The subsystems are crates of their own: the graph core ([`svc_graph`]:
//! ids, CRNs, the interner, the columnar shards, the source port), the
//! stores ([`svc_store`]: graph store, snapshot, ledger), analysis
//! ([`svc_analysis`]: built-in rules, heuristic feed, pattern, linker,
//! reachability, signals, prices), policy ([`svc_policy`]: CEL) and
//! remediation ([`svc_remediation`]: items, plans, their store). This crate
//! holds the [`Engine`] handle and the scan pipeline ([`scan`]) that runs
//! their passes in SPEC order, and re-exports each subsystem under the
//! module name the rest of the workspace uses. The engine holds its state
//! as owned subsystems, each with its locks private (ranked in [`ranks`]):
//! the core (graph, interner, stores, clock), the sources, the findings,
//! the policies, the scan state, the cost signals and remediation. It does
//! no network I/O and knows nothing of tokio, tonic, axum or JSON wire
//! shapes: boundary crates convert.

pub mod engine;
mod findings;
mod graph_core;
pub mod policy;
pub mod ranks;
pub mod remediation;
pub mod scan;
mod sources;

pub use svc_analysis::{heuristics, prices, signal};
pub use svc_graph::{blast, clock, crn, graph, ids, intern, malloc, props, relation};
pub use svc_store as store;

/// The analysis passes that run after the heuristics: alike resources
/// ([`pattern`]), the cross-provider linker ([`linker`]), observed traffic
/// ([`traffic`]) and formal verification ([`reach`]).
pub mod analysis {
    pub use svc_analysis::{linker, pattern, reach, traffic};
}

pub use crn::{Crn, CrnError, CrnRef};
pub use engine::{Engine, EngineError, ItemsLoad, SNAPSHOT_FILE, ScanPermit};
pub use graph::Graph;
pub use ids::{EdgeId, NodeId, Sym};
pub use intern::Interner;
pub use relation::Relation;

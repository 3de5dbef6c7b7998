//! svc-analysis: what the scan learns about the graph once it is ingested.
//!
//! - [`heuristics`]: the built-in rules and heuristic plugins' findings,
//!   joined into each node's verdict (`engine.heuristics`).
//! - [`pattern`]: alike resources and their outliers (`engine.pattern`).
//! - [`linker`]: cross-provider edges no plugin can see
//!   (`engine.ghost_linker`).
//! - [`reach`]: reachability from entry points and each node's risk
//!   (`engine.formal_verify`); [`traffic`]: observed flows.
//! - [`signal`]: cost history and anomalies (`engine.signal_analysis`),
//!   kept in `graph.redb`.
//! - [`prices`]: the pricing table the rules and the mock estate read.
//!
//! Every pass is a plain function over the graph's columns; none does
//! network I/O.

pub mod heuristics;
pub mod linker;
pub mod pattern;
pub mod prices;
pub mod reach;
pub mod signal;
pub mod traffic;

//! svc-ingest: the boundary between the engine and the resources it scans.
//!
//! Owns the sources of node and edge batches that the engine's scan pipeline
//! reads through [`svc_engine::scan::Source`]. [`decode`]
//! turns provider plugin messages into the engine's batches; [`host`] finds,
//! verifies, launches and talks to plugin processes.

pub mod decode;
pub mod host;
pub mod packs;
pub mod registry;
pub mod remote;

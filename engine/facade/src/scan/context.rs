//! What one scan carries from phase to phase.

use std::collections::BTreeMap;
use std::time::Instant;

use super::report::ScanReport;
use crate::engine::Engine;
use crate::heuristics::Analyzer;
use crate::signal::Analysis;
use svc_graph::source::{ScanLimits, Source};

/// The explicit state of one scan: what it was given, and what its phases
/// have found so far.
pub(super) struct Scan<'a> {
    pub engine: &'a Engine,
    pub sources: &'a mut [Box<dyn Source>],
    pub analyzers: &'a mut [Box<dyn Analyzer>],
    pub configs: &'a BTreeMap<String, BTreeMap<String, String>>,
    /// Scan only the sources that serve one of these providers.
    pub only: Option<&'a [String]>,
    pub limits: ScanLimits,
    /// The root span, `engine.run`.
    pub root: &'a tracing::Span,
    pub started: Instant,
    /// The scan's time (`engine.init` reads the clock).
    pub now_us: u64,
    pub report: ScanReport,
    /// The cost signals `engine.signal_analysis` worked out, installed after the commit.
    pub signal: Option<Analysis>,
}

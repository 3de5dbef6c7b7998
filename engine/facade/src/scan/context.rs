//! What one scan carries from phase to phase.

use std::collections::BTreeMap;
use std::time::Instant;

use super::report::ScanReport;
use super::state::ScanState;
use crate::findings::Findings;
use crate::graph_core::Core;
use crate::heuristics::Analyzer;
use crate::policy::Policies;
use crate::signal::{Analysis, Signal};
use crate::sources::Sources;
use svc_graph::source::{ScanLimits, Source};
use svc_remediation::Remediation;

/// The explicit state of one scan: the engine's core and subsystems its
/// phases read and write, what it was given, and what its phases have
/// found so far.
pub(super) struct Scan<'a> {
    pub core: &'a Core,
    /// What each source answered for, and which serves each provider.
    pub registry: &'a Sources,
    pub findings: &'a Findings,
    pub policy: &'a Policies,
    pub scans: &'a ScanState,
    /// Cost history and anomalies.
    pub costs: &'a Signal,
    pub remediation: &'a Remediation,
    /// The sources, locked for the scan.
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

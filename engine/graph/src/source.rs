//! The engine's view of the outside world during a scan: sources of node
//! and edge batches. The plugin host implements [`Source`] over provider
//! plugins; the mock estate and tests implement it in memory.

use std::collections::BTreeMap;

use thiserror::Error;

use crate::graph::{EdgeBatch, Graph, NodeBatch};
use crate::intern::Interner;

/// Runs a closure with the graph read-locked, for a moment.
pub type ReadGraph<'a> = dyn Fn(&mut dyn FnMut(&Graph)) + Sync + 'a;

/// What a source gets to know about the scan it serves.
pub struct ScanContext<'a> {
    /// Intern CRN segments, types, states, tag and property keys here.
    pub interner: &'a Interner,
    /// Sequence number of this scan (1 for the first scan of a data directory).
    pub scan_seq: u64,
    /// Scan time, microseconds since the Unix epoch.
    pub now_us: u64,
    /// Scan configuration for this source (region, project, subscription, ...).
    pub config: &'a BTreeMap<String, String>,
    /// How long this scan may run, when the request or the configuration
    /// set it (`svc scan --timeout 20m`, `daemon.scan_timeout`); otherwise
    /// the source's own default.
    pub timeout: Option<std::time::Duration>,
    /// How many sources this scan runs at once, this one included: a
    /// source that sizes a pool of threads by the CPUs shares them.
    pub concurrent: usize,
    /// The graph as the scan found it, for a source that looks up what it
    /// is about to send: a node the graph holds live with the same
    /// content fingerprint ([`crate::graph::NodeShard::unchanged_row`])
    /// need not be decoded, and travels as a [`crate::graph::FoundNode`].
    /// `None` when the graph held nothing.
    pub graph: Option<&'a ReadGraph<'a>>,
}

/// What one source may send in one scan, so a source that never stops
/// (a paging loop that starts over, a plugin's bug) fails its own scan
/// instead of growing the daemon's memory until the timeout: its resources
/// are kept as they were, as for any failed source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanLimits {
    /// How long a source may scan; `None`: the source's own default.
    pub timeout: Option<std::time::Duration>,
    /// Nodes one source may report in one scan (`daemon.scan_max_nodes`).
    pub max_nodes: u64,
    /// Edges one source may report in one scan (`daemon.scan_max_edges`).
    pub max_edges: u64,
}

impl ScanLimits {
    /// Twice the largest estates the daemon is built for (10^7 resources)
    /// in one source.
    pub const DEFAULT_MAX_NODES: u64 = 20_000_000;
    /// Five edges a node at [`ScanLimits::DEFAULT_MAX_NODES`] (the mock
    /// estate has about 1.8).
    pub const DEFAULT_MAX_EDGES: u64 = 100_000_000;
}

impl Default for ScanLimits {
    fn default() -> ScanLimits {
        ScanLimits {
            timeout: None,
            max_nodes: ScanLimits::DEFAULT_MAX_NODES,
            max_edges: ScanLimits::DEFAULT_MAX_EDGES,
        }
    }
}

/// Receives what a source discovers. Nodes and edges may arrive in any order
/// and any number of batches; edges are resolved after all nodes are in.
pub trait ScanSink {
    fn nodes(&mut self, batch: NodeBatch);
    fn edges(&mut self, batch: EdgeBatch);
    /// A node batch the sink is done with, emptied, for the source to fill
    /// again instead of allocating a new one (its memory is already
    /// paged in); `None` when the sink keeps what it is given.
    fn spare_nodes(&mut self) -> Option<NodeBatch> {
        None
    }
    /// Why the sink takes nothing more from this source (it passed one of
    /// the scan's [`ScanLimits`]); a source that can should stop sending.
    fn refused(&self) -> Option<&str> {
        None
    }
}

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum SourceError {
    #[error("{0}")]
    Failed(String),
    #[error("scan timed out after {0}")]
    Timeout(String),
}

/// A source of resources: one plugin, or the mock estate.
pub trait Source: Send {
    /// Name shown in logs and scan reports (`mock`, `aws`, ...).
    fn name(&self) -> &str;
    /// Providers (CRN provider segments) this source reports. When its scan
    /// fails, resources of these providers are kept as they are.
    fn providers(&self) -> Vec<String>;
    /// Scans, sending batches to `sink`. An error fails only this source.
    fn scan(&mut self, ctx: &ScanContext<'_>, sink: &mut dyn ScanSink) -> Result<(), SourceError>;
    /// Items the last scan dropped as malformed, and the first reasons.
    fn rejections(&self) -> (u64, Vec<String>) {
        (0, Vec::new())
    }
    /// The parts of its estate the last scan could not list although the
    /// scan succeeded (a region that refused, a service that failed):
    /// their resources are kept as they were while the rest of the scan
    /// counts. Empty when the scan listed everything.
    fn unlisted(&self) -> Vec<Unlisted> {
        Vec::new()
    }
    /// Releases what the source holds (a plugin process) when the daemon stops.
    fn stop(&mut self) {}
    /// What tells this source from others when the sources are rebuilt (a
    /// plugin's binary): a new source with the identity of one already
    /// there gives way to it, which keeps what it holds (its running
    /// plugin). `None`: always replaced.
    fn identity(&self) -> Option<String> {
        None
    }
    /// When the estate of the last scan was observed (Unix seconds), for a
    /// source whose clock is not the wall clock (a simulated estate). Ages
    /// such as "stopped for 43 days" are measured from it.
    fn observed_at(&self) -> Option<u64> {
        None
    }

    /// Whether [`Source::check_reversibility`] can answer at all, so the
    /// engine gathers a resource's properties for it only when it can.
    fn checks_reversibility(&self) -> bool {
        false
    }

    /// The source's own proof that acting on `crn` can be undone
    /// (`CheckReversibility`); `None` when it has no opinion, and the
    /// engine's built-in rules decide.
    fn check_reversibility(
        &mut self,
        _crn: &str,
        _properties: &BTreeMap<String, String>,
    ) -> Option<Result<ReversibilityProof, SourceError>> {
        None
    }

    /// [`Source::check_reversibility`] for several resources, answered in
    /// the order asked. A source whose answers cross a connection keeps
    /// several questions in flight; the default asks one at a time.
    fn check_reversibility_many(
        &mut self,
        asks: &[ReversibilityAsk],
    ) -> Vec<Option<Result<ReversibilityProof, SourceError>>> {
        asks.iter()
            .map(|a| self.check_reversibility(&a.crn, &a.properties))
            .collect()
    }

    /// Runs one remediation step (`Remediate`); `None` when the source
    /// cannot remediate.
    fn remediate(&mut self, _request: &RemediateRequest<'_>) -> Option<Result<RemediateOutcome, SourceError>> {
        None
    }

    /// Quarantines a resource (`ApplyQuarantine`); `None` when the source
    /// cannot.
    fn apply_quarantine(
        &mut self,
        _crn: &str,
        _action: &str,
        _reason: &str,
    ) -> Option<Result<QuarantineOutcome, SourceError>> {
        None
    }
}

/// A source built when it is first used rather than when it is set up:
/// a simulated estate of ten million resources takes most of a second to
/// plan, which a daemon's start need not wait for. Its name and providers
/// are given up front, as the engine asks for them before any scan.
pub struct Deferred<S> {
    name: String,
    providers: Vec<String>,
    make: Box<dyn Fn() -> S + Send>,
    built: std::sync::OnceLock<S>,
}

impl<S: Source> Deferred<S> {
    pub fn new(name: &str, providers: Vec<String>, make: impl Fn() -> S + Send + 'static) -> Deferred<S> {
        Deferred {
            name: name.to_owned(),
            providers,
            make: Box::new(make),
            built: std::sync::OnceLock::new(),
        }
    }

    fn get(&self) -> &S {
        self.built.get_or_init(&self.make)
    }

    fn get_mut(&mut self) -> &mut S {
        self.get();
        match self.built.get_mut() {
            Some(source) => source,
            None => unreachable!("built just above"),
        }
    }
}

impl<S: Source> Source for Deferred<S> {
    fn name(&self) -> &str {
        &self.name
    }
    fn providers(&self) -> Vec<String> {
        self.providers.clone()
    }
    fn scan(&mut self, ctx: &ScanContext<'_>, sink: &mut dyn ScanSink) -> Result<(), SourceError> {
        self.get_mut().scan(ctx, sink)
    }
    fn rejections(&self) -> (u64, Vec<String>) {
        self.built.get().map(S::rejections).unwrap_or_default()
    }
    fn unlisted(&self) -> Vec<Unlisted> {
        self.built.get().map(S::unlisted).unwrap_or_default()
    }
    fn stop(&mut self) {
        if let Some(source) = self.built.get_mut() {
            source.stop();
        }
    }
    fn observed_at(&self) -> Option<u64> {
        self.built.get().and_then(S::observed_at)
    }
    fn checks_reversibility(&self) -> bool {
        self.get().checks_reversibility()
    }
    fn check_reversibility(
        &mut self,
        crn: &str,
        properties: &BTreeMap<String, String>,
    ) -> Option<Result<ReversibilityProof, SourceError>> {
        self.get_mut().check_reversibility(crn, properties)
    }
    fn check_reversibility_many(
        &mut self,
        asks: &[ReversibilityAsk],
    ) -> Vec<Option<Result<ReversibilityProof, SourceError>>> {
        self.get_mut().check_reversibility_many(asks)
    }
    fn remediate(&mut self, request: &RemediateRequest<'_>) -> Option<Result<RemediateOutcome, SourceError>> {
        self.get_mut().remediate(request)
    }
    fn apply_quarantine(
        &mut self,
        crn: &str,
        action: &str,
        reason: &str,
    ) -> Option<Result<QuarantineOutcome, SourceError>> {
        self.get_mut().apply_quarantine(crn, action, reason)
    }
}

/// A part of a source's estate that its scan could not list: every field
/// that is set narrows it (a region; a service of one region; an account).
/// Nothing of it is retired by that scan.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Unlisted {
    /// CRN provider segment; `None`: every provider the source reports.
    pub provider: Option<String>,
    pub account: Option<String>,
    pub region: Option<String>,
    /// CRN service segment (`rds`, `ec2`, ...).
    pub service: Option<String>,
    /// Why it could not be listed.
    pub error: String,
}

/// A source's answer to `CheckReversibility`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReversibilityProof {
    pub safe: bool,
    pub reason: String,
}

/// [`Source::check_reversibility`] for a source that asks through
/// [`Source::check_reversibility_many`]: one ask of one.
pub fn check_one<S: Source + ?Sized>(
    source: &mut S,
    crn: &str,
    properties: &BTreeMap<String, String>,
) -> Option<Result<ReversibilityProof, SourceError>> {
    let ask = ReversibilityAsk {
        crn: crn.to_owned(),
        properties: properties.clone(),
    };
    source
        .check_reversibility_many(std::slice::from_ref(&ask))
        .pop()
        .flatten()
}

/// One resource of [`Source::check_reversibility_many`]: its CRN and the
/// properties the engine holds for it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReversibilityAsk {
    pub crn: String,
    pub properties: BTreeMap<String, String>,
}

/// One `Remediate` call.
#[derive(Clone, Debug)]
pub struct RemediateRequest<'a> {
    /// Graph form.
    pub crn: &'a str,
    pub action: &'a str,
    pub properties: &'a BTreeMap<String, String>,
    pub dry_run: bool,
}

/// What `Remediate` answered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RemediateOutcome {
    pub success: bool,
    pub status: String,
    pub error: String,
    /// What the action changed, enough to undo it (a snapshot id, the
    /// previous state).
    pub snapshot: BTreeMap<String, String>,
}

/// What `ApplyQuarantine` answered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QuarantineOutcome {
    pub success: bool,
    pub message: String,
}

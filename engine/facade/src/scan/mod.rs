//! The scan pipeline: the ten phases of SPEC section 1, in order.
//!
//! - [`pipeline`]: the phase table and the runner (spans, timing, errors,
//!   commit); [`context`]: what a scan carries from phase to phase.
//! - [`state`]: what the engine keeps of its scans, and the commit.
//! - [`ingest`], [`verdicts`], [`passes`]: the phases themselves.
//! - [`report`]: what a scan reports, and the span names.
//! - [`progress`]: what the running scan has done so far.

mod context;
mod ingest;
mod passes;
mod pipeline;
pub mod progress;
mod report;
mod state;
mod verdicts;

pub(crate) use pipeline::{announce, run};
pub use report::{CollectSink, ScanReport, SourceOutcome, spans};
pub(crate) use state::{ScanListener, ScanState};
pub use svc_graph::source::{
    Deferred, QuarantineOutcome, ReadGraph, RemediateOutcome, RemediateRequest, ReversibilityAsk, ReversibilityProof,
    ScanContext, ScanLimits, ScanSink, Source, SourceError, Unlisted, check_one,
};
pub use svc_graph::stage;

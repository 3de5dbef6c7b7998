//! The scan pipeline: the ten phases of SPEC section 1, in order.

mod pipeline;
mod source;

pub mod stage;
pub use pipeline::{CollectSink, ScanReport, SourceOutcome, spans};
pub(crate) use pipeline::{announce, run};
pub use source::{
    QuarantineOutcome, RemediateOutcome, RemediateRequest, ReversibilityProof, ScanContext, ScanLimits, ScanSink,
    Source, SourceError,
};

//! The scan pipeline: the ten phases of SPEC section 1, in order.

mod pipeline;
pub use pipeline::{CollectSink, ScanReport, SourceOutcome, spans};
pub(crate) use pipeline::{announce, run};
pub use svc_graph::source::{
    QuarantineOutcome, RemediateOutcome, RemediateRequest, ReversibilityProof, ScanContext, ScanLimits, ScanSink,
    Source, SourceError,
};
pub use svc_graph::stage;

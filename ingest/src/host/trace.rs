//! Trace context for plugin calls: the W3C `traceparent` of the host's
//! span goes with each call, in the gRPC metadata, so the spans a plugin
//! makes for the call join the daemon's trace. Nothing is sent when the
//! daemon exports no traces (the span has no OpenTelemetry context).

use opentelemetry::trace::TraceContextExt;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The metadata key (W3C Trace Context).
pub const TRACEPARENT: &str = "traceparent";

/// `00-<trace id>-<span id>-<flags>` of `span`, when it is exported.
pub fn traceparent(span: &tracing::Span) -> Option<String> {
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    sc.is_valid()
        .then(|| format!("00-{}-{}-{:02x}", sc.trace_id(), sc.span_id(), sc.trace_flags().to_u8()))
}

/// `message` as a call made inside `span`: its `traceparent` in the metadata.
pub fn request<T>(span: &tracing::Span, message: T) -> tonic::Request<T> {
    let mut req = tonic::Request::new(message);
    if let Some(value) = traceparent(span).and_then(|v| v.parse().ok()) {
        req.metadata_mut().insert(TRACEPARENT, value);
    }
    req
}

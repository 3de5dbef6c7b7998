//! A plugin's spans (SPEC 4.9): one per call of the daemon, a child of the
//! daemon's span through the `traceparent` in the call's metadata, exported
//! over OTLP/HTTP (protobuf) to the daemon's collector.
//!
//! Export is on only when `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the full
//! traces URL, as the daemon sets it) or `OTEL_EXPORTER_OTLP_ENDPOINT` (a
//! base address, `/v1/traces` appended) is set. Spans leave from a batch
//! processor's thread with a bounded queue ([`QUEUE_SPANS`]): a collector
//! that does not answer never holds a call up. The queue is flushed after
//! each call and when the plugin stops. The service name is the binary's
//! (`svc-plugin-<name>`).
//!
//! | gRPC method | span |
//! |---|---|
//! | `Provider/Scan` | `plugin.scan` (until the stream ends) |
//! | `Provider/Handshake` | `plugin.handshake` |
//! | `Provider/PreflightCheck` | `plugin.preflight` |
//! | `Provider/ApplyQuarantine` | `plugin.quarantine` |
//! | `Remediator/Remediate` | `plugin.remediate` |
//! | `HeuristicPlugin/Analyze` | `plugin.analyze` |

use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};
use std::time::Duration;

use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};
use tonic::body::Body;
use tonic::codegen::http::{HeaderMap, Request, Response};
use tonic::codegen::{BoxFuture, Service};
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Spans waiting for export at most; the next ones are dropped.
pub const QUEUE_SPANS: usize = 2048;
/// Time an export request may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);
/// Time the last spans get when the plugin stops.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(2);
/// The instrumentation scope of a plugin's spans.
pub const SCOPE: &str = "svc/plugin";

static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// The traces URL from the environment, when export is asked for.
fn endpoint_from_env(var: impl Fn(&str) -> Option<String>) -> Option<String> {
    let set = |name: &str| var(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
    if let Some(url) = set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
        return Some(url);
    }
    set("OTEL_EXPORTER_OTLP_ENDPOINT").map(|base| format!("{}/v1/traces", base.trim_end_matches('/')))
}

/// The plugin's name for the collector: its binary's file name.
fn service_name() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "svc-plugin".to_owned())
}

/// The tracer for the `tracing` layer when export is asked for; a problem
/// setting it up is logged and leaves export off.
pub(crate) fn tracer() -> Option<opentelemetry_sdk::trace::Tracer> {
    let url = endpoint_from_env(|k| std::env::var(k).ok())?;
    let exporter = match opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(url.clone())
        .with_timeout(EXPORT_TIMEOUT)
        .build()
    {
        Ok(e) => e,
        Err(e) => {
            eprintln!("trace export to {url} is off: {e}");
            return None;
        }
    };
    let batch = BatchSpanProcessor::builder(exporter)
        .with_batch_config(BatchConfigBuilder::default().with_max_queue_size(QUEUE_SPANS).build())
        .build();
    let provider = SdkTracerProvider::builder()
        .with_resource(
            Resource::builder_empty()
                .with_service_name(service_name())
                .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
                .build(),
        )
        .with_span_processor(batch)
        .build();
    let tracer = provider.tracer_with_scope(
        InstrumentationScope::builder(SCOPE)
            .with_version(env!("CARGO_PKG_VERSION"))
            .build(),
    );
    let _ = PROVIDER.set(provider);
    Some(tracer)
}

/// Sends the spans that ended so far. Blocks: call it off the async runtime.
pub fn flush() {
    if let Some(p) = PROVIDER.get() {
        let _ = p.force_flush();
    }
}

/// Sends what is left and stops export (at most two seconds). Blocks.
pub fn shutdown() {
    if let Some(p) = PROVIDER.get() {
        let _ = p.shutdown_with_timeout(SHUTDOWN_TIMEOUT);
    }
}

/// The span name of a call, by its gRPC path.
fn span_name(path: &str) -> Option<&'static str> {
    Some(match path.rsplit_once('/')?.1 {
        "Scan" => "plugin.scan",
        "Handshake" => "plugin.handshake",
        "PreflightCheck" => "plugin.preflight",
        "ApplyQuarantine" => "plugin.quarantine",
        "Remediate" => "plugin.remediate",
        "Analyze" => "plugin.analyze",
        _ => return None,
    })
}

struct Headers<'a>(&'a HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

/// The span of one call: named by its method, the daemon's span its parent.
fn call_span(path: &str, headers: &HeaderMap) -> Option<tracing::Span> {
    let name = span_name(path)?;
    let span = tracing::info_span!(
        "plugin.call",
        otel.name = name,
        otel.kind = "server",
        rpc.system = "grpc",
        rpc.method = path
    );
    let parent = TraceContextPropagator::new().extract(&Headers(headers));
    let _ = span.set_parent(parent);
    Some(span)
}

/// The tower layer that gives each call its span.
#[derive(Clone, Copy, Debug, Default)]
pub struct TraceLayer;

impl<S> tower::Layer<S> for TraceLayer {
    type Service = Traced<S>;
    fn layer(&self, inner: S) -> Traced<S> {
        Traced { inner }
    }
}

/// A service whose calls run in their span.
#[derive(Clone, Debug)]
pub struct Traced<S> {
    inner: S,
}

impl<S> Service<Request<Body>> for Traced<S>
where
    S: Service<Request<Body>, Response = Response<Body>> + Send,
    S::Future: Send + 'static,
{
    type Response = Response<TracedBody>;
    type Error = S::Error;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let span = if PROVIDER.get().is_some() {
            call_span(req.uri().path(), req.headers())
        } else {
            None
        };
        let Some(span) = span else {
            let call = self.inner.call(req);
            return Box::pin(async move { Ok(call.await?.map(|inner| TracedBody { inner, span: None })) });
        };
        let call = {
            let _entered = span.enter();
            self.inner.call(req)
        };
        Box::pin(async move {
            let response = call.instrument(span.clone()).await?;
            // The span lasts until the response's body (a scan's stream) ends.
            Ok(response.map(|inner| TracedBody {
                inner,
                span: Some(span),
            }))
        })
    }
}

/// A response body that holds its call's span until it is dropped, then
/// has the spans sent.
pub struct TracedBody {
    inner: Body,
    span: Option<tracing::Span>,
}

impl http_body::Body for TracedBody {
    type Data = bytes::Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for TracedBody {
    fn drop(&mut self) {
        if let Some(span) = self.span.take() {
            // The span ends here; then it leaves, off the async runtime.
            drop(span);
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                drop(rt.spawn_blocking(flush));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_comes_from_the_standard_variables() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned())
        };
        assert_eq!(endpoint_from_env(env(&[])), None);
        assert_eq!(
            endpoint_from_env(env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/")])).as_deref(),
            Some("http://c:4318/v1/traces")
        );
        assert_eq!(
            endpoint_from_env(env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:4318/v1/traces"),
            ]))
            .as_deref(),
            Some("http://t:4318/v1/traces")
        );
    }

    #[test]
    fn calls_are_named_by_method() {
        assert_eq!(span_name("/svc.provider.v1.Provider/Scan"), Some("plugin.scan"));
        assert_eq!(
            span_name("/svc.provider.v1.Remediator/Remediate"),
            Some("plugin.remediate")
        );
        assert_eq!(span_name("/grpc.health.v1.Health/Check"), None);
    }
}

//! OTLP/HTTP trace export (SPEC 4.9), on when `svc daemon --otlp-endpoint
//! URL` is given.
//!
//! The daemon's `tracing` spans of its own crates (target `svc*`, level
//! info and up) become OpenTelemetry spans through `tracing-opentelemetry`
//! and leave in protobuf over HTTP from a batch processor's thread: a span
//! that ends is put in a bounded queue ([`QUEUE_SPANS`]) without waiting, so
//! a scan never waits for the collector. A collector that cannot be reached
//! costs the spans that do not fit in the queue and one warning per
//! [`WARN_EVERY`]; the queue's memory is bounded by its length.
//!
//! The instrumentation scope is set per span as the batch leaves (one
//! tracer serves the whole `tracing` layer): `svc/engine` for the scan's
//! `engine.*` spans, `svc/plugin-host` for the host's `plugin.*` spans,
//! `svc/http` for the API's request spans, `svc` for anything else.
//!
//! Plugins the daemon launches get `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
//! ([`plugin_env`]); the SDK exports their spans to the same collector, as
//! children of the host's span through `traceparent`.

use std::fmt;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, SpanData, SpanExporter};
use parking_lot::Mutex;

/// Spans waiting for export at most; the next ones are dropped. A span of
/// the daemon is well under 2 KiB (a name, up to a dozen attributes, a few
/// events), so the queue holds a few MiB at worst.
pub const QUEUE_SPANS: usize = 2048;
/// Spans per export request.
const BATCH_SPANS: usize = 512;
/// Time an export request may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);
/// Time the last spans get to leave when the daemon stops.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);
/// At most one warning about failing exports per this long.
pub const WARN_EVERY: Duration = Duration::from_secs(300);

/// Instrumentation scopes, declared once.
pub mod scopes {
    pub const ENGINE: &str = "svc/engine";
    pub const PLUGIN_HOST: &str = "svc/plugin-host";
    pub const HTTP: &str = "svc/http";
    pub const OTHER: &str = "svc";
}

/// The endpoint plugins are told, set once when export starts.
static TRACES_ENDPOINT: OnceLock<String> = OnceLock::new();

/// Environment for a plugin process: where to send its spans, when the
/// daemon sends its own somewhere.
pub fn plugin_env() -> Vec<(String, String)> {
    TRACES_ENDPOINT
        .get()
        .map(|url| vec![("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT".to_owned(), url.clone())])
        .unwrap_or_default()
}

/// The traces URL of `--otlp-endpoint`: a base address (`http://host:4318`)
/// gets `/v1/traces`; a URL already ending in it is kept.
pub fn traces_url(endpoint: &str) -> anyhow::Result<String> {
    let url = endpoint.trim().trim_end_matches('/');
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .with_context(|| format!("invalid --otlp-endpoint {endpoint:?}: expected an http:// or https:// URL"))?;
    if rest.is_empty() || rest.starts_with('/') {
        bail!("invalid --otlp-endpoint {endpoint:?}: no host");
    }
    if reqwest::Url::parse(url).is_err() {
        bail!("invalid --otlp-endpoint {endpoint:?}: not a URL");
    }
    Ok(if url.ends_with("/v1/traces") {
        url.to_owned()
    } else {
        format!("{url}/v1/traces")
    })
}

/// The running export; [`Telemetry::shutdown`] sends what is queued.
pub struct Telemetry {
    provider: SdkTracerProvider,
}

impl Telemetry {
    /// Sends the queued spans (at most [`SHUTDOWN_TIMEOUT`]) and stops.
    pub fn shutdown(self) {
        if let Err(e) = self.provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT) {
            tracing::warn!(error = %e, "trace export did not finish before the daemon stopped");
        }
    }
}

/// Starts export to `endpoint`; the tracer for the `tracing` layer.
pub fn start(endpoint: &str) -> anyhow::Result<(Telemetry, opentelemetry_sdk::trace::Tracer)> {
    let url = traces_url(endpoint)?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(url.clone())
        .with_timeout(EXPORT_TIMEOUT)
        .build()
        .with_context(|| format!("cannot set up trace export to {url}"))?;
    let exporter = Scoped {
        inner: exporter,
        url: url.clone(),
        failures: Mutex::new(Failures::default()),
    };
    let batch = BatchSpanProcessor::builder(exporter)
        .with_batch_config(
            BatchConfigBuilder::default()
                .with_max_queue_size(QUEUE_SPANS)
                .with_max_export_batch_size(BATCH_SPANS)
                .build(),
        )
        .build();
    let provider = SdkTracerProvider::builder()
        .with_resource(
            Resource::builder_empty()
                .with_service_name("svc")
                .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
                .build(),
        )
        .with_span_processor(batch)
        .build();
    let tracer = provider.tracer_with_scope(
        InstrumentationScope::builder(scopes::OTHER)
            .with_version(env!("CARGO_PKG_VERSION"))
            .build(),
    );
    let _ = TRACES_ENDPOINT.set(url);
    Ok((Telemetry { provider }, tracer))
}

/// The scope a span is reported under, from its name and attributes.
fn scope_of(span: &SpanData) -> &'static str {
    if span.name.starts_with("engine.") {
        scopes::ENGINE
    } else if span.name.starts_with("plugin.") {
        scopes::PLUGIN_HOST
    } else if span
        .attributes
        .iter()
        .any(|kv| kv.key.as_str() == "http.request.method")
    {
        scopes::HTTP
    } else {
        scopes::OTHER
    }
}

/// Failed exports since the last warning.
#[derive(Default)]
struct Failures {
    last_warned: Option<Instant>,
    since: u64,
}

/// The OTLP exporter behind a step that names each span's scope and
/// reports failures at most once per [`WARN_EVERY`].
struct Scoped<E> {
    inner: E,
    url: String,
    failures: Mutex<Failures>,
}

impl<E> fmt::Debug for Scoped<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scoped").field("url", &self.url).finish()
    }
}

impl<E: SpanExporter> Scoped<E> {
    fn outcome(&self, spans: usize, result: &OTelSdkResult) {
        let mut failures = self.failures.lock();
        match result {
            Ok(()) => {
                if failures.since > 0 {
                    tracing::info!(url = %self.url, failed = failures.since, "trace export works again");
                }
                *failures = Failures::default();
            }
            Err(e) => {
                failures.since += 1;
                if failures.last_warned.is_none_or(|t| t.elapsed() >= WARN_EVERY) {
                    tracing::warn!(url = %self.url, error = %e, spans, failed = failures.since,
                        "trace export failed: spans are dropped until the collector answers (next warning in 5 minutes at most)");
                    failures.last_warned = Some(Instant::now());
                    failures.since = 0;
                }
            }
        }
    }
}

impl<E: SpanExporter> SpanExporter for Scoped<E> {
    async fn export(&self, mut batch: Vec<SpanData>) -> OTelSdkResult {
        for span in &mut batch {
            let name = scope_of(span);
            if span.instrumentation_scope.name() != name {
                span.instrumentation_scope = InstrumentationScope::builder(name)
                    .with_version(env!("CARGO_PKG_VERSION"))
                    .build();
            }
        }
        let spans = batch.len();
        let result = self.inner.export(batch).await;
        self.outcome(spans, &result);
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_address_gets_the_traces_path() {
        assert_eq!(
            traces_url("http://127.0.0.1:4318").ok().as_deref(),
            Some("http://127.0.0.1:4318/v1/traces")
        );
        assert_eq!(
            traces_url("http://collector:4318/").ok().as_deref(),
            Some("http://collector:4318/v1/traces")
        );
        assert_eq!(
            traces_url("https://tempo.example/v1/traces").ok().as_deref(),
            Some("https://tempo.example/v1/traces")
        );
    }

    #[test]
    fn a_url_that_is_not_http_is_refused() {
        for bad in [
            "",
            "127.0.0.1:4318",
            "grpc://collector:4317",
            "http://",
            "http:///v1/traces",
        ] {
            let e = traces_url(bad).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(e.contains("invalid --otlp-endpoint"), "{bad:?}: {e}");
        }
    }
}

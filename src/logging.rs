//! Logging: plain text for people, or one JSON object per line with the
//! fields SPEC 4.9 names (`level`, `ts` in RFC 3339, `msg`) plus the event's
//! context fields and the names of the spans it happened in.

use std::fmt;

use serde_json::{Map, Value};
use tracing::Level;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use crate::telemetry::Telemetry;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// Installs the logger (`SVC_LOG` filters it, `info` by default) and, with
/// `otlp_endpoint`, trace export ([`crate::telemetry`]), which sees the
/// spans of the daemon's own crates whatever `SVC_LOG` says.
pub fn init(format: &str, otlp_endpoint: Option<&str>) -> anyhow::Result<Option<Telemetry>> {
    let filter = EnvFilter::try_from_env("SVC_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let fmt = match format {
        "json" => tracing_subscriber::fmt::layer().event_format(SpecJson).boxed(),
        "text" => tracing_subscriber::fmt::layer().with_ansi(ansi).boxed(),
        other => anyhow::bail!("unknown log format {other:?}: use text or json"),
    };
    let (telemetry, otel) = match otlp_endpoint {
        Some(endpoint) => {
            let (telemetry, tracer) = crate::telemetry::start(endpoint)?;
            let spans = Targets::new().with_target("svc", Level::INFO);
            let layer = tracing_opentelemetry::layer().with_tracer(tracer).with_filter(spans);
            (Some(telemetry), Some(layer))
        }
        None => (None, None),
    };
    tracing_subscriber::registry()
        .with(fmt.with_filter(filter))
        .with(otel)
        .try_init()
        .map_err(|e| anyhow::anyhow!("cannot install the logger: {e}"))?;
    Ok(telemetry)
}

struct SpecJson;

impl<S, N> FormatEvent<S, N> for SpecJson
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let mut obj = Map::new();
        obj.insert(
            "ts".into(),
            chrono::Utc::now()
                .to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
                .into(),
        );
        obj.insert(
            "level".into(),
            event.metadata().level().as_str().to_ascii_lowercase().into(),
        );
        obj.insert("target".into(), event.metadata().target().into());
        event.record(&mut Fields(&mut obj));
        if let Some(scope) = ctx.event_scope() {
            let spans: Vec<Value> = scope.from_root().map(|s| Value::from(s.name())).collect();
            if !spans.is_empty() {
                obj.insert("spans".into(), Value::Array(spans));
            }
        }
        writeln!(writer, "{}", Value::Object(obj))
    }
}

struct Fields<'a>(&'a mut Map<String, Value>);

impl Fields<'_> {
    fn put(&mut self, field: &Field, v: Value) {
        let name = if field.name() == "message" { "msg" } else { field.name() };
        self.0.insert(name.to_owned(), v);
    }
}

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, value.into());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, value.into());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, value.into());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, value.into());
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, value.into());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, format!("{value:?}").into());
    }
}

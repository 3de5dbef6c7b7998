//! Logging: plain text for people, or one JSON object per line with the
//! fields SPEC 4.9 names (`level`, `ts` in RFC 3339, `msg`) plus the event's
//! context fields and the names of the spans it happened in.

use std::fmt;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

pub fn init(format: &str) -> anyhow::Result<()> {
    let filter = EnvFilter::try_from_env("SVC_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout());
    match format {
        "json" => tracing_subscriber::fmt()
            .event_format(SpecJson)
            .with_env_filter(filter)
            .init(),
        "text" => tracing_subscriber::fmt().with_ansi(ansi).with_env_filter(filter).init(),
        other => anyhow::bail!("unknown log format {other:?}: use text or json"),
    }
    Ok(())
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

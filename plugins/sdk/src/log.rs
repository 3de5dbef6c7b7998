//! Logging to stderr as hclog JSON lines, the format the daemon forwards:
//! `{"@level":"info","@message":"...","@module":"...","@timestamp":"..."}`
//! plus the event's fields.

use std::io::Write;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

/// Installs the hclog JSON logger at `info` (or the level in
/// `SVC_PLUGIN_LOG_LEVEL`: trace, debug, info, warn, error), and trace
/// export when the daemon asks for it ([`crate::trace`]). Does nothing
/// when a global subscriber is already set.
pub fn init() {
    let level = std::env::var("SVC_PLUGIN_LOG_LEVEL")
        .ok()
        .and_then(|v| v.parse::<LevelFilter>().ok())
        .unwrap_or(LevelFilter::INFO);
    // The plugin's spans, when the daemon exports traces (`crate::trace`).
    let otel = crate::trace::tracer().map(|tracer| {
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_filter(Targets::new().with_target("svc", Level::INFO))
    });
    let _already_set = tracing_subscriber::registry()
        .with(HclogLayer.with_filter(level))
        .with(otel)
        .try_init();
}

/// Writes each event as one hclog JSON line on stderr.
pub struct HclogLayer;

fn level_name(level: &Level) -> &'static str {
    match *level {
        Level::TRACE => "trace",
        Level::DEBUG => "debug",
        Level::INFO => "info",
        Level::WARN => "warn",
        Level::ERROR => "error",
    }
}

/// Renders one event as an hclog JSON object.
pub fn hclog_line(level: &Level, module: &str, message: String, fields: Map<String, Value>) -> String {
    let mut obj = Map::with_capacity(fields.len() + 4);
    obj.insert("@level".into(), level_name(level).into());
    obj.insert("@message".into(), message.into());
    obj.insert("@module".into(), module.into());
    obj.insert(
        "@timestamp".into(),
        chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string().into(),
    );
    for (k, v) in fields {
        obj.entry(k).or_insert(v);
    }
    Value::Object(obj).to_string()
}

#[derive(Default)]
struct Fields {
    message: String,
    map: Map<String, Value>,
}

impl Fields {
    fn put(&mut self, field: &Field, v: Value) {
        if field.name() == "message" {
            self.message = match v {
                Value::String(s) => s,
                other => other.to_string(),
            };
        } else {
            self.map.insert(field.name().to_owned(), v);
        }
    }
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.put(field, Value::String(format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, value.into());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, value.into());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, value.into());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, value.into());
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(
            field,
            serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number),
        );
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.put(field, Value::String(value.to_string()));
    }
}

impl<S: Subscriber> Layer<S> for HclogLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let meta = event.metadata();
        let line = hclog_line(meta.level(), meta.target(), fields.message, fields.map);
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_has_hclog_keys_and_fields() {
        let mut fields = Map::new();
        fields.insert("nodes".into(), 3.into());
        fields.insert("@level".into(), "spoofed".into());
        let line = hclog_line(&Level::WARN, "svc_plugin_mock", "scan finished".into(), fields);
        let v: Value = serde_json::from_str(&line).expect("valid JSON");
        assert_eq!(v["@level"], "warn");
        assert_eq!(v["@message"], "scan finished");
        assert_eq!(v["@module"], "svc_plugin_mock");
        assert_eq!(v["nodes"], 3);
        let ts = v["@timestamp"].as_str().expect("timestamp string");
        assert!(chrono::DateTime::parse_from_rfc3339(ts).is_ok(), "{ts}");
        assert!(!line.contains('\n'));
    }
}

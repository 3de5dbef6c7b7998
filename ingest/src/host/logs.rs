//! A plugin's stderr and stray stdout in the daemon's log. Plugins built on
//! go-plugin write hclog JSON lines (`{"@level":"info","@message":"..."}`);
//! those keep their level, anything else is logged at info as it is.

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// Forwards every line of `stream` to the log until it closes.
pub(crate) async fn forward_lines(plugin: String, stream: impl AsyncRead + Unpin, source: &'static str) {
    let mut lines = BufReader::new(stream).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        log_line(&plugin, source, &line);
    }
}

fn log_line(plugin: &str, source: &str, line: &str) {
    if line.trim().is_empty() {
        return;
    }
    let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(line) else {
        tracing::info!(plugin, source, "{line}");
        return;
    };
    let message = obj.get("@message").and_then(Value::as_str).unwrap_or(line);
    let module = obj.get("@module").and_then(Value::as_str).unwrap_or("");
    let fields: Vec<String> = obj
        .iter()
        .filter(|(k, _)| !k.starts_with('@'))
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect();
    let fields = fields.join(" ");
    match obj.get("@level").and_then(Value::as_str).unwrap_or("info") {
        "trace" => tracing::trace!(plugin, module, fields, "{message}"),
        "debug" => tracing::debug!(plugin, module, fields, "{message}"),
        "warn" | "warning" => tracing::warn!(plugin, module, fields, "{message}"),
        "error" => tracing::error!(plugin, module, fields, "{message}"),
        _ => tracing::info!(plugin, module, fields, "{message}"),
    }
}

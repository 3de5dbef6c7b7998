//! `svc notify test`: a test notification through the daemon, with what
//! each receiver answered.

use std::process::ExitCode;

use serde_json::Value;

use super::client::Client;
use super::output::{self, s, table};
use super::remote::Remote;

pub async fn test(remote: &Remote, all: bool) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let query = if all {
        vec![("all", "true".to_owned())]
    } else {
        Vec::new()
    };
    let v = match client.post_query("/api/v1/config/slack-test", &query).await {
        Ok(v) => v,
        Err(f) => return Ok(f.report()),
    };
    let delivered = v.get("delivered").and_then(Value::as_bool) == Some(true);
    if output::structured(remote, &v) {
    } else {
        let rows: Vec<Vec<String>> = v
            .get("results")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|r| {
                // Printable: the answer comes from outside.
                let (error, body) = (s(r, "error"), s(r, "body"));
                let answer = match (error.is_empty(), body.is_empty()) {
                    (false, false) => format!("{error}: {body}"),
                    (false, true) => error,
                    (true, _) => body,
                };
                vec![
                    s(r, "destination"),
                    if r.get("delivered").and_then(Value::as_bool) == Some(true) {
                        "yes"
                    } else {
                        "no"
                    }
                    .to_owned(),
                    s(r, "status"),
                    format!("{} ms", s(r, "duration_ms")),
                    answer,
                ]
            })
            .collect();
        table(&["DESTINATION", "DELIVERED", "STATUS", "TIME", "ANSWER"], &rows);
    }
    Ok(if delivered {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

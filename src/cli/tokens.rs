//! `svc token create|list|revoke`: API tokens with roles, through the API
//! (an admin's work: by default the CLI sends the admin token of the token
//! file).

use std::process::ExitCode;

use serde_json::{Value, json};

use super::client::{Client, encode_segment};
use super::output::{self, s, table};
use super::remote::Remote;

pub async fn create(remote: &Remote, name: &str, role: &str) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let v = call!(client.post("/api/v1/tokens", json!({"name": name, "role": role})));
    if output::structured(remote, &v) {
        return Ok(ExitCode::SUCCESS);
    }
    println!("{}", s(&v, "token"));
    eprintln!(
        "token {:?} ({}) created; it is shown this once: keep it, then send it as `Authorization: Bearer <token>` or SVC_TOKEN",
        s(&v, "name"),
        s(&v, "role")
    );
    Ok(ExitCode::SUCCESS)
}

pub async fn list(remote: &Remote) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let v = call!(client.get("/api/v1/tokens", &[]));
    if output::structured(remote, &v) {
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = v
        .get("tokens")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|t| vec![s(t, "name"), s(t, "role"), super::time::field(t, "created")])
        .collect();
    table(&["NAME", "ROLE", "CREATED"], &rows);
    Ok(ExitCode::SUCCESS)
}

pub async fn revoke(remote: &Remote, name: &str) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let v = call!(client.delete(&format!("/api/v1/tokens/{}", encode_segment(name))));
    if output::structured(remote, &v) {
    } else {
        println!("token {:?} ({}) revoked", s(&v, "name"), s(&v, "role"));
    }
    Ok(ExitCode::SUCCESS)
}

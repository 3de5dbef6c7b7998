//! The REST API fuzzed against its own contract: schemathesis (PyPI, the
//! version `scripts/test` pins into `.venv`) generates requests from
//! `schemas/openapi.yaml`, valid and invalid, and sends them to a real
//! daemon in mock mode. No answer may be a 5xx, and every answer must be
//! one the document declares for that operation: its status, its content
//! type, its headers and its body schema.
//!
//! The run is reproducible (a fixed seed, one worker, no example database)
//! and bounded (a fixed number of examples per operation and a deadline).
//! One operation is left out: `PUT /api/v1/config`, which reconfigures the
//! daemon under test. A generated configuration can switch the simulated
//! estate off for the rest of the run, scan every second, or point the
//! compliance export at any directory of the machine or at a remote S3
//! bucket, so the requests after it would no longer test the daemon this
//! run started; its validation is covered by `e2e_faults.rs` and the
//! configuration's own tests.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::Daemon;

/// Test cases generated per operation and phase.
const MAX_EXAMPLES: u32 = 25;
/// The seed of every run, so a failure reproduces.
const SEED: u64 = 20_260_401;
/// The longest the whole run may take; it takes well under half of this.
const DEADLINE: Duration = Duration::from_secs(420);
/// The checks every answer must pass.
const CHECKS: &str = "not_a_server_error,status_code_conformance,content_type_conformance,\
                      response_headers_conformance,response_schema_conformance";
/// Operations left out, by operation id, and why (see the module comment).
const EXCLUDED: [&str; 1] = ["putConfig"];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The schemathesis version `scripts/test` installs.
fn pinned_version() -> String {
    let script = repo().join("scripts/test");
    let text = std::fs::read_to_string(&script).unwrap_or_else(|e| panic!("cannot read {}: {e}", script.display()));
    let at = text
        .find("schemathesis==")
        .unwrap_or_else(|| panic!("{} pins no schemathesis version", script.display()))
        + "schemathesis==".len();
    text[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '.')
        .collect()
}

/// The schemathesis executable of the repository's venv (or of the venv
/// first on `PATH`, as `scripts/test` sets it up), checked to be the pinned
/// version: its options and checks are those of that version.
fn schemathesis() -> PathBuf {
    let want = pinned_version();
    let candidates = [
        std::env::var_os("VIRTUAL_ENV").map(|v| PathBuf::from(v).join("bin/schemathesis")),
        Some(repo().join(".venv/bin/schemathesis")),
    ];
    let exe = candidates
        .into_iter()
        .flatten()
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "schemathesis {want} is needed and is not in {}: run the suite with scripts/test, \
                 which installs it into .venv",
                repo().join(".venv/bin").display()
            )
        });
    let out = std::process::Command::new(&exe)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()));
    let version = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && version.split_whitespace().last() == Some(want.as_str()),
        "{} is not schemathesis {want} (it says {:?}, {}): run scripts/test, which installs the pinned version",
        exe.display(),
        version.trim(),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    exe
}

/// Runs schemathesis against the daemon; returns its exit code and report.
async fn fuzz(exe: &Path, d: &Daemon, work: &Path) -> (Option<i32>, String) {
    let spec = repo().join("schemas/openapi.yaml");
    let mut cmd = tokio::process::Command::new(exe);
    cmd.arg("run")
        .arg(&spec)
        .args(["--url", &d.base()])
        .args(["--header", &format!("Authorization: Bearer {}", d.token)])
        .args(["--checks", CHECKS])
        .args(["--max-examples", &MAX_EXAMPLES.to_string()])
        .args(["--seed", &SEED.to_string()])
        .args(["--workers", "1"])
        .args(["--generation-database", "none"])
        .args(["--suppress-health-check", "all"])
        .args(["--request-timeout", "120"])
        .args(["--no-color", "--output-truncate", "false"]);
    for id in EXCLUDED {
        cmd.args(["--exclude-operation-id", id]);
    }
    cmd.current_dir(work)
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("COLUMNS", "120")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let out = tokio::time::timeout(DEADLINE, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("schemathesis did not finish within {DEADLINE:?}"))
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()));
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), report)
}

/// `N` of a report line `label N/M` or `label N`.
fn count_after(report: &str, label: &str) -> Option<usize> {
    let line = report.lines().find(|l| l.trim_start().starts_with(label))?;
    line.trim_start()[label.len()..]
        .trim()
        .split('/')
        .next()?
        .trim()
        .parse()
        .ok()
}

#[tokio::test]
async fn every_answer_to_generated_requests_is_declared_and_none_is_a_server_error() {
    let exe = schemathesis();
    let dir = common::data_dir();
    let work = tempfile::tempdir().unwrap();
    let d = Daemon::start_scanned(dir.path(), 300).await;

    let started = Instant::now();
    let (code, report) = fuzz(&exe, &d, work.path()).await;
    let took = started.elapsed();
    assert_eq!(
        code,
        Some(0),
        "schemathesis found answers outside schemas/openapi.yaml or server errors (run took {took:?}):\n{report}\n\
         --- daemon log ---\n{}",
        d.log.text()
    );

    // Every operation of the document but the excluded ones was exercised.
    let operations = svc_api::ROUTES.len();
    assert_eq!(
        count_after(&report, "Selected:"),
        Some(operations - EXCLUDED.len()),
        "operations selected:\n{report}"
    );
    assert_eq!(
        count_after(&report, "Tested:"),
        Some(operations - EXCLUDED.len()),
        "operations tested:\n{report}"
    );
    assert!(
        !d.log.text().contains("panicked"),
        "the daemon panicked during the run:\n{}",
        d.log.text()
    );

    // The daemon is still ready, and the ledger the run wrote into verifies.
    d.anonymous().get("/readyz").await.expect(200);
    let verify = d.api().get_ok("/api/v1/ledger/verify").await;
    assert_eq!(verify["ok"], true, "{verify}");
}

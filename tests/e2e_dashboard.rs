//! The web dashboard end to end: Debian's Chromium, headless, driven by
//! Playwright (`web/e2e/*.test.mjs`, run with Node's test runner) against a
//! real daemon in mock mode with a 100,000-resource estate.
//!
//! Needs Node.js, `web/node_modules` (`npm ci` in `web/`) and
//! `/usr/bin/chromium`; `scripts/test` installs all three.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::path::Path;
use std::process::Command;

use common::Daemon;

/// Resources in the mock estate: the graph view must draw this many.
const SCALE: usize = 100_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_in_a_real_browser() {
    let web = Path::new(env!("CARGO_MANIFEST_DIR")).join("web");
    assert!(
        web.join("node_modules/playwright-core").exists(),
        "web/node_modules is missing: run `npm ci` in web/ (scripts/test does)"
    );
    let chromium = std::env::var("SVC_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(
        Path::new(&chromium).exists(),
        "{chromium} is missing: install Debian's chromium (scripts/test does)"
    );
    let data = tempfile::tempdir().unwrap();
    // Inactive: Settings lists it and an admin toggles it.
    common::install_mock_plugin(data.path());
    let mut daemon = Daemon::start_scanned(data.path(), SCALE).await;
    let base = daemon.base();
    let token = daemon.token.clone();
    let out = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .args(["--test", "--test-concurrency=1", "--test-reporter=spec"])
            .arg("e2e/")
            .current_dir(&web)
            .env("SVC_URL", base)
            .env("SVC_ADMIN_TOKEN", token)
            .env("SVC_CHROMIUM", chromium)
            .env("NO_COLOR", "1")
            .output()
    })
    .await
    .unwrap()
    .expect("run node (is Node.js installed?)");
    let report = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let status = daemon.stop().await;
    assert!(
        out.status.success(),
        "the browser tests failed:\n{report}\n--- daemon log ---\n{}",
        daemon.log.text()
    );
    assert!(status.success(), "the daemon did not stop cleanly: {status:?}");
    // The spec reporter's summary: "ℹ pass N".
    let passed = report
        .lines()
        .find_map(|l| l.trim_start_matches(['ℹ', ' ']).strip_prefix("pass "))
        .and_then(|n| n.trim().parse::<u32>().ok());
    assert!(passed.is_some_and(|n| n > 0), "no browser test ran:\n{report}");
}

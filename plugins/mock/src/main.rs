//! `svc-plugin-mock`: a provider plugin serving the deterministic mock
//! estate over the real plugin path (DESIGN 7), started by the daemon.
//!
//! Scan config keys: `seed` (default 42), `scale` (300), `scan_seq` (1; the
//! estate is shown at epoch `scan_seq - 1`), `batch_size` (nodes per
//! response, 1000). `SVC_MOCK_FAIL` injects failures for tests (see
//! [`FailMode`]); `SVC_MOCK_HANG_ACTIONS=delete,...` makes those Remediate
//! actions never answer (a saga caught mid-step), as the in-process mock
//! estate's switch of that name does.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use svc_plugin_mock::fail::FailMode;
use svc_plugin_mock::provider::{self, MockProvider};

#[tokio::main]
async fn main() -> ExitCode {
    // Its estate is written into buffers of hundreds of kilobytes, as the
    // daemon's scans are.
    svc_engine::malloc::tune();
    let fail = match FailMode::from_env() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    if matches!(fail, FailMode::GarbageHandshake | FailMode::NoHandshake) {
        if svc_plugin_sdk::check_startup(&svc_plugin_sdk::PROVIDER_COOKIE).is_err() {
            return ExitCode::FAILURE;
        }
        if fail == FailMode::GarbageHandshake {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "hello world");
            let _ = out.flush();
        }
        std::future::pending::<()>().await;
    }
    let plugin = MockProvider {
        shared: Arc::new(provider::Shared::default()),
        fail,
    };
    svc_plugin_sdk::exit_code(svc_plugin_sdk::serve_encoded_provider_with_remediator(plugin.clone(), plugin).await)
}

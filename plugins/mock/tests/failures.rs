//! Startup checks and the failure modes injected by `SVC_MOCK_FAIL`, which
//! the daemon's plugin host is tested against.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::time::Duration;

use common::*;
use svc_proto::plugin::Empty;
use svc_proto::provider::v1::HandshakeRequest;

/// How long silence must last to count as "nothing was sent".
const QUIET: Duration = Duration::from_millis(1500);

#[tokio::test]
async fn without_the_cookie_exits_1_with_a_message() {
    let out = command(&[])
        .env_remove("SVC_PLUGIN")
        .stderr(std::process::Stdio::piped())
        .output()
        .await
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("This binary is an svc provider plugin; it is started by the svc daemon, not by hand."),
        "{err}"
    );
}

#[tokio::test]
async fn unsupported_protocol_version_exits_1() {
    let out = command(&[("PLUGIN_PROTOCOL_VERSIONS", "2,3")])
        .stderr(std::process::Stdio::piped())
        .output()
        .await
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("protocol versions"));
}

#[tokio::test]
async fn crash_mid_scan_exits_3_after_one_response() {
    let (mut p, h, mut c) = started(&[("SVC_MOCK_FAIL", "crash_mid_scan")]).await;
    let mut stream = c
        .provider
        .scan(scan_request(&[("batch_size", "50")]))
        .await
        .expect("scan starts")
        .into_inner();
    let first = stream.message().await.expect("first response arrives");
    assert!(first.is_some_and(|r| !r.nodes.is_empty()));
    let mut failed = false;
    loop {
        match tokio::time::timeout(PROMPT, stream.message())
            .await
            .expect("stream ends")
        {
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    assert!(failed, "the stream fails instead of ending cleanly");
    assert_eq!(p.exit_code().await, Some(3));
    let dir = std::path::Path::new(&h.addr)
        .parent()
        .expect("socket in a directory")
        .to_owned();
    assert!(!dir.exists(), "socket directory removed");
}

#[tokio::test]
async fn hang_sends_nothing_until_shutdown() {
    let (mut p, _h, mut c) = started(&[("SVC_MOCK_FAIL", "hang")]).await;
    let mut stream = c
        .provider
        .scan(scan_request(&[]))
        .await
        .expect("scan starts")
        .into_inner();
    assert!(
        tokio::time::timeout(QUIET, stream.message()).await.is_err(),
        "scan stays silent"
    );
    assert!(p.child.try_wait().expect("try_wait").is_none());
    let _ = c.controller.shutdown(Empty {}).await;
    assert_eq!(
        p.exit_code().await,
        Some(0),
        "shutdown ends a hung scan after the grace period"
    );
}

#[tokio::test]
async fn garbage_handshake_prints_hello_world_and_keeps_running() {
    let mut p = Plugin::start(&[("SVC_MOCK_FAIL", "garbage_handshake")]);
    assert_eq!(p.first_line().await, "hello world");
    assert!(
        tokio::time::timeout(QUIET, p.child.wait()).await.is_err(),
        "still running"
    );
    p.child.kill().await.expect("kill");
}

#[tokio::test]
async fn no_handshake_prints_nothing_and_keeps_running() {
    let mut p = Plugin::start(&[("SVC_MOCK_FAIL", "no_handshake")]);
    assert!(
        tokio::time::timeout(QUIET, p.stdout.next_line()).await.is_err(),
        "no line"
    );
    assert!(p.child.try_wait().expect("try_wait").is_none());
    p.child.kill().await.expect("kill");
}

#[tokio::test]
async fn malformed_nodes_in_first_response() {
    let (mut p, _h, mut c) = started(&[("SVC_MOCK_FAIL", "malformed_nodes")]).await;
    let responses = scan_all(&mut c.provider, &[("batch_size", "100")]).await;
    let first = &responses[0];
    assert!(first.nodes.iter().any(|n| n.crn == "crn:svc:aws"));
    assert!(first.nodes.iter().any(|n| n.properties == b"{not json"));
    assert!(first.nodes.iter().any(|n| n.cost.is_nan()));
    let bad = responses
        .iter()
        .flat_map(|r| &r.nodes)
        .filter(|n| svc_engine::Crn::parse(&n.crn).is_err() || n.cost.is_nan() || n.properties == b"{not json")
        .count();
    assert_eq!(bad, 3, "only the three injected nodes are malformed");
    let _ = c.controller.shutdown(Empty {}).await;
    assert_eq!(p.exit_code().await, Some(0));
}

#[tokio::test]
async fn incompatible_handshake() {
    let (mut p, _h, mut c) = started(&[("SVC_MOCK_FAIL", "incompatible")]).await;
    let hs = c
        .provider
        .handshake(HandshakeRequest {
            daemon_version: "0.1.0".into(),
        })
        .await
        .expect("handshake")
        .into_inner();
    assert!(!hs.compatible);
    assert_eq!(hs.message, "mock plugin speaks protocol 0 only");
    let _ = c.controller.shutdown(Empty {}).await;
    assert_eq!(p.exit_code().await, Some(0));
}

#[tokio::test]
async fn unknown_fail_mode_is_refused() {
    let out = command(&[("SVC_MOCK_FAIL", "explode")])
        .stderr(std::process::Stdio::piped())
        .output()
        .await
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid SVC_MOCK_FAIL"));
}

/// A plugin whose host is killed (no shutdown call, no SIGTERM: the host
/// had no chance to stop it) stops by itself and removes its socket.
/// A shell stands in for the host: it starts the plugin, prints the
/// plugin's pid and is killed.
#[tokio::test]
async fn a_plugin_whose_host_is_killed_stops_by_itself() {
    let mut host = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(format!("'{BIN}' & echo \"pid $!\"; wait"))
        .env_remove("SVC_MOCK_FAIL")
        .env_remove("SVC_PLUGIN_TRANSPORT")
        .env("SVC_PLUGIN", "svc")
        .env("PLUGIN_PROTOCOL_VERSIONS", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("sh starts");
    let stdout = host.stdout.take().expect("piped stdout");
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
    let (mut pid, mut handshake) = (None, None);
    while pid.is_none() || handshake.is_none() {
        let line = tokio::time::timeout(PROMPT, lines.next_line())
            .await
            .expect("a line within the bound")
            .expect("stdout readable")
            .expect("the pid and the handshake line before EOF");
        match line.strip_prefix("pid ") {
            Some(p) => pid = Some(p.to_owned()),
            None => handshake = Some(parse_handshake(&line)),
        }
    }
    let (pid, h) = (pid.unwrap_or_default(), handshake.expect("handshake"));
    let mut c = clients(connect(&h).await);
    assert!(is_serving(&mut c.health, "plugin").await);
    host.kill().await.expect("the host is killed");
    // The plugin shares the host's stdout: it ends when the plugin exits.
    let end = tokio::time::timeout(PROMPT, lines.next_line())
        .await
        .unwrap_or_else(|_| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"));
            panic!("plugin {pid} still running after its host was killed: {stat:?}")
        });
    assert!(matches!(end, Ok(None)), "{end:?}");
    let dir = std::path::Path::new(&h.addr).parent().expect("socket in a directory");
    assert!(!dir.exists(), "{} left behind", dir.display());
}

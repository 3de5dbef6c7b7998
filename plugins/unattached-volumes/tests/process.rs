//! The plugin binary as the daemon starts it: without the magic cookie it
//! refuses to run; with it, it prints a go-plugin handshake line.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_svc-plugin-unattached-volumes");

#[test]
fn refuses_to_start_without_the_cookie() {
    let out = Command::new(BIN)
        .env_remove("SVC_HEURISTIC_PLUGIN")
        .output()
        .expect("run the plugin");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("started by the svc daemon"), "{err}");
}

#[test]
fn prints_a_handshake_line_when_started_by_the_daemon() {
    let mut child = Command::new(BIN)
        .env("SVC_HEURISTIC_PLUGIN", "svc-heuristic")
        .env("PLUGIN_PROTOCOL_VERSIONS", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the plugin");
    let mut line = String::new();
    let read = BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line);
    let _ = child.kill();
    let _ = child.wait();
    read.expect("read the handshake line");
    let fields: Vec<&str> = line.trim_end().split('|').collect();
    assert_eq!(fields[..3], ["1", "1", "unix"], "{line}");
    assert_eq!(fields[4], "grpc", "{line}");
}

#[test]
fn rejects_a_bad_setting_with_its_name() {
    let out = Command::new(BIN)
        .env("SVC_HEURISTIC_PLUGIN", "svc-heuristic")
        .env("PLUGIN_PROTOCOL_VERSIONS", "1")
        .env("SVC_HEURISTIC_RISK", "high")
        .output()
        .expect("run the plugin");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("invalid SVC_HEURISTIC_RISK \"high\""), "{err}");
}

//! The plugin handshake line: both transports, the optional fields, and
//! every refusal quoting the line.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

use svc_ingest::host::{Handshake, Net, parse_handshake};

fn ok(line: &str) -> Handshake {
    match parse_handshake(line) {
        Ok(h) => h,
        Err(e) => panic!("{line:?} should parse: {e}"),
    }
}

fn refused(line: &str) -> String {
    match parse_handshake(line) {
        Ok(h) => panic!("{line:?} should be refused, parsed as {h:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn host_unix_line_with_trailing_bar_and_newline() {
    let h = ok("1|1|unix|/tmp/plugin123|grpc|\n");
    assert_eq!(
        h,
        Handshake {
            core: 1,
            app: 1,
            net: Net::Unix,
            addr: "/tmp/plugin123".into(),
            proto: "grpc".into(),
            cert: None,
            mux: false,
        }
    );
}

#[test]
fn host_tcp_line_without_cert_field() {
    let h = ok("1|1|tcp|127.0.0.1:10001|grpc");
    assert_eq!(h.net, Net::Tcp);
    assert_eq!(h.addr, "127.0.0.1:10001");
    assert_eq!(h.cert, None);
}

#[test]
fn host_crlf_and_extra_trailing_bars_are_tolerated() {
    let h = ok("1|1|tcp|127.0.0.1:10001|grpc|||\r\n");
    assert_eq!(h.addr, "127.0.0.1:10001");
    assert!(!h.mux);
}

#[test]
fn host_cert_field_is_kept() {
    let h = ok("1|1|unix|/tmp/p.sock|grpc|MIIBdzCCAR2gAwIBAgIRAL");
    assert_eq!(h.cert.as_deref(), Some("MIIBdzCCAR2gAwIBAgIRAL"));
}

#[test]
fn host_mux_field_is_read() {
    assert!(ok("1|1|unix|/tmp/p.sock|grpc||true").mux);
    assert!(!ok("1|1|unix|/tmp/p.sock|grpc||false").mux);
    let e = refused("1|1|unix|/tmp/p.sock|grpc||maybe");
    assert!(e.contains("multiplexing flag \"maybe\""), "{e}");
}

#[test]
fn host_garbage_is_refused_quoting_the_line() {
    let e = refused("hello world\n");
    assert!(e.starts_with("invalid handshake line \"hello world\": "), "{e}");
    assert!(e.contains("found 1 field(s)"), "{e}");
    let e = refused("");
    assert!(e.starts_with("invalid handshake line \"\": "), "{e}");
    let e = refused("1|1|unix|/a|grpc|c|true|extra");
    assert!(e.contains("found 8 field(s)"), "{e}");
}

#[test]
fn host_wrong_versions_network_and_protocol_are_refused() {
    let e = refused("2|1|unix|/tmp/p|grpc|");
    assert!(
        e.contains("core protocol version 2 is not supported (expected 1)"),
        "{e}"
    );
    assert!(e.contains("\"2|1|unix|/tmp/p|grpc|\""), "{e}");
    let e = refused("1|3|unix|/tmp/p|grpc|");
    assert!(
        e.contains("app protocol version 3 is not supported (expected 1)"),
        "{e}"
    );
    let e = refused("x|1|unix|/tmp/p|grpc|");
    assert!(e.contains("core protocol version \"x\" is not a number"), "{e}");
    let e = refused("1|1|udp|/tmp/p|grpc|");
    assert!(e.contains("unknown network \"udp\""), "{e}");
    let e = refused("1|1|unix|/tmp/p|netrpc|");
    assert!(
        e.contains("protocol \"netrpc\" is not supported (expected grpc)"),
        "{e}"
    );
    let e = refused("1|1|unix||grpc|");
    assert!(e.contains("empty address"), "{e}");
}

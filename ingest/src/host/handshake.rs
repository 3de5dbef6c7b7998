//! The handshake line a plugin prints on stdout once it is listening:
//! `CORE|APP|NET|ADDR|PROTO|SERVERCERT[|MUX]`, for example
//! `1|1|unix|/tmp/plugin123|grpc|`.

use std::fmt;

use thiserror::Error;

/// The plugin framework's core protocol version.
pub const CORE_PROTOCOL_VERSION: u32 = 1;
/// The svc plugin protocol version (`PLUGIN_PROTOCOL_VERSIONS`).
pub const APP_PROTOCOL_VERSION: u32 = 1;

/// How to reach the plugin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Net {
    Unix,
    Tcp,
}

impl fmt::Display for Net {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Net::Unix => "unix",
            Net::Tcp => "tcp",
        })
    }
}

/// A parsed handshake line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handshake {
    pub core: u32,
    pub app: u32,
    pub net: Net,
    /// Socket path (unix) or `host:port` (tcp).
    pub addr: String,
    /// Always `grpc`.
    pub proto: String,
    /// Base64 server certificate when the plugin serves TLS (AutoMTLS).
    pub cert: Option<String>,
    /// Whether the plugin can multiplex its broker over this connection.
    pub mux: bool,
}

/// Why a handshake line was refused, with the line itself.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("invalid handshake line {line:?}: {reason}")]
pub struct HandshakeError {
    pub line: String,
    pub reason: String,
}

/// Parses a handshake line. Trailing line breaks and trailing empty fields
/// are tolerated; anything but core 1, app 1, `unix`/`tcp` and `grpc` is refused.
pub fn parse_handshake(line: &str) -> Result<Handshake, HandshakeError> {
    let trimmed = line.trim();
    let fail = |reason: String| HandshakeError {
        line: trimmed.to_owned(),
        reason,
    };
    let mut fields: Vec<&str> = trimmed.split('|').collect();
    while fields.len() > 5 && fields.last().is_some_and(|f| f.is_empty()) {
        fields.pop();
    }
    if fields.len() < 5 || fields.len() > 7 {
        return Err(fail(format!(
            "expected CORE|APP|NET|ADDR|PROTO|SERVERCERT[|MUX], found {} field(s)",
            fields.len()
        )));
    }
    let version = |what: &str, field: &str, want: u32| -> Result<u32, HandshakeError> {
        let v: u32 = field
            .parse()
            .map_err(|_| fail(format!("{what} protocol version {field:?} is not a number")))?;
        if v != want {
            return Err(fail(format!(
                "{what} protocol version {v} is not supported (expected {want})"
            )));
        }
        Ok(v)
    };
    let core = version("core", fields[0], CORE_PROTOCOL_VERSION)?;
    let app = version("app", fields[1], APP_PROTOCOL_VERSION)?;
    let net = match fields[2] {
        "unix" => Net::Unix,
        "tcp" => Net::Tcp,
        other => return Err(fail(format!("unknown network {other:?} (expected unix or tcp)"))),
    };
    let addr = fields[3];
    if addr.is_empty() {
        return Err(fail("empty address".to_owned()));
    }
    let proto = fields[4];
    if proto != "grpc" {
        return Err(fail(format!("protocol {proto:?} is not supported (expected grpc)")));
    }
    let cert = fields.get(5).filter(|c| !c.is_empty()).map(|c| (*c).to_owned());
    let mux = match fields.get(6).copied().unwrap_or("") {
        "" | "false" => false,
        "true" => true,
        other => return Err(fail(format!("multiplexing flag {other:?} is not true or false"))),
    };
    Ok(Handshake {
        core,
        app,
        net,
        addr: addr.to_owned(),
        proto: proto.to_owned(),
        cert,
        mux,
    })
}

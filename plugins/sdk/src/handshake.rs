//! The go-plugin handshake: the magic cookie the daemon sets, the protocol
//! versions it offers, and the one line the plugin prints on stdout once it
//! listens.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

use crate::error::SdkError;

/// The framework's core protocol version (go-plugin's `CoreProtocolVersion`).
pub const CORE_PROTOCOL_VERSION: u32 = 1;
/// The application protocol version of svc plugins.
pub const APP_PROTOCOL_VERSION: u32 = 1;

/// The environment variable and value that prove the daemon started the plugin.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Cookie {
    pub key: &'static str,
    pub value: &'static str,
    /// What the plugin is, for the message shown when started by hand.
    pub role: &'static str,
}

/// Provider plugins (SPEC 4.8).
pub const PROVIDER_COOKIE: Cookie = Cookie {
    key: "SVC_PLUGIN",
    value: "svc",
    role: "provider",
};

/// Heuristic plugins (SPEC 4.8).
pub const HEURISTIC_COOKIE: Cookie = Cookie {
    key: "SVC_HEURISTIC_PLUGIN",
    value: "svc-heuristic",
    role: "heuristic",
};

impl Cookie {
    /// The message printed when the binary is run without the cookie.
    pub fn by_hand_message(&self) -> String {
        format!(
            "This binary is an svc {} plugin; it is started by the svc daemon, not by hand.",
            self.role
        )
    }

    /// Checks the cookie against an environment lookup.
    pub fn check(&self, env: impl Fn(&str) -> Option<String>) -> Result<(), SdkError> {
        match env(self.key) {
            Some(v) if v == self.value => Ok(()),
            _ => Err(SdkError::NotStartedByDaemon {
                key: self.key,
                value: self.value,
            }),
        }
    }
}

/// Checks `PLUGIN_PROTOCOL_VERSIONS` (a comma list). Unset means the
/// daemon offers the default version, as go-plugin reads it.
pub fn check_protocol_versions(offered: Option<&str>) -> Result<(), SdkError> {
    let Some(offered) = offered else {
        return Ok(());
    };
    let speaks = offered
        .split(',')
        .any(|v| v.trim().parse::<u32>() == Ok(APP_PROTOCOL_VERSION));
    if speaks {
        Ok(())
    } else {
        Err(SdkError::UnsupportedProtocol {
            offered: offered.to_owned(),
        })
    }
}

/// Where the plugin listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListenAddr {
    Unix(PathBuf),
    Tcp(SocketAddr),
}

/// The handshake line, without the newline:
/// `CORE|APP|NETWORK|ADDR|PROTOCOL|SERVERCERT` (no certificate: empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandshakeLine<'a>(pub &'a ListenAddr);

impl fmt::Display for HandshakeLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (network, addr) = match self.0 {
            ListenAddr::Unix(path) => ("unix", path.display().to_string()),
            ListenAddr::Tcp(addr) => ("tcp", addr.to_string()),
        };
        write!(
            f,
            "{CORE_PROTOCOL_VERSION}|{APP_PROTOCOL_VERSION}|{network}|{addr}|grpc|"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_line() {
        let addr = ListenAddr::Unix(PathBuf::from("/tmp/plugin123/plugin.sock"));
        assert_eq!(
            HandshakeLine(&addr).to_string(),
            "1|1|unix|/tmp/plugin123/plugin.sock|grpc|"
        );
    }

    #[test]
    fn tcp_line() {
        let addr = ListenAddr::Tcp("127.0.0.1:10001".parse().expect("literal address"));
        assert_eq!(HandshakeLine(&addr).to_string(), "1|1|tcp|127.0.0.1:10001|grpc|");
    }

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| pairs.iter().find(|(key, _)| *key == k).map(|(_, v)| (*v).to_owned())
    }

    #[test]
    fn cookie_must_match_exactly() {
        assert!(PROVIDER_COOKIE.check(env(&[("SVC_PLUGIN", "svc")])).is_ok());
        assert!(PROVIDER_COOKIE.check(env(&[("SVC_PLUGIN", "svc ")])).is_err());
        assert!(PROVIDER_COOKIE.check(env(&[])).is_err());
        assert!(
            PROVIDER_COOKIE
                .check(env(&[("SVC_HEURISTIC_PLUGIN", "svc-heuristic")]))
                .is_err()
        );
        assert!(
            HEURISTIC_COOKIE
                .check(env(&[("SVC_HEURISTIC_PLUGIN", "svc-heuristic")]))
                .is_ok()
        );
        assert!(HEURISTIC_COOKIE.check(env(&[("SVC_PLUGIN", "svc")])).is_err());
    }

    #[test]
    fn by_hand_message_names_the_role() {
        assert_eq!(
            PROVIDER_COOKIE.by_hand_message(),
            "This binary is an svc provider plugin; it is started by the svc daemon, not by hand."
        );
        assert!(HEURISTIC_COOKIE.by_hand_message().contains("svc heuristic plugin"));
    }

    #[test]
    fn protocol_versions() {
        assert!(check_protocol_versions(None).is_ok());
        assert!(check_protocol_versions(Some("1")).is_ok());
        assert!(check_protocol_versions(Some("2, 1")).is_ok());
        assert!(check_protocol_versions(Some("2,3")).is_err());
        assert!(check_protocol_versions(Some("")).is_err());
    }
}

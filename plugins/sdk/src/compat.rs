//! Whether a plugin serves a daemon of a given version: the answer of a
//! provider's `Handshake`, the same for every plugin.

/// The leading number of a version such as `v1.2.3`.
pub fn major(version: &str) -> Option<&str> {
    let v = version.trim().trim_start_matches('v');
    let m = v.split('.').next()?;
    (!m.is_empty() && m.bytes().all(|b| b.is_ascii_digit())).then_some(m)
}

/// Whether a plugin of major version `plugin_major` serves a daemon of
/// `daemon_version`, and the message that says so: a daemon of another
/// major is refused; a version that does not parse is assumed compatible,
/// and the message says so.
pub fn compatibility(daemon_version: &str, plugin_major: &str) -> (bool, String) {
    match major(daemon_version) {
        Some(m) if m != plugin_major => (
            false,
            format!("daemon version {daemon_version} has major {m}; this plugin supports major {plugin_major}"),
        ),
        Some(_) => (true, "ready".to_owned()),
        None => (
            true,
            format!("daemon version {daemon_version:?} not understood; assuming compatible"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_daemon_of_another_major_is_refused() {
        assert_eq!(major("v0.9.1"), Some("0"));
        assert_eq!(major("x"), None);
        assert!(compatibility("0.1.0", "0").0);
        assert!(compatibility("v0.9", "0").0);
        let (ok, message) = compatibility("1.0.0", "0");
        assert!(!ok && message.contains("major 1"), "{message}");
        let (ok, message) = compatibility("dev", "0");
        assert!(ok && message.contains("not understood"), "{message}");
    }
}

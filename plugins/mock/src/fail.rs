//! Failure injection for the daemon's plugin-host tests, chosen by
//! `SVC_MOCK_FAIL` when the process starts.

/// How the plugin misbehaves.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FailMode {
    /// Behaves.
    None,
    /// Exits with code 3 after sending the first ScanResponse.
    CrashMidScan,
    /// Scan never sends anything and never completes.
    Hang,
    /// Scan sends its first ScanResponse, then sends nothing more and
    /// never completes (until the daemon cancels it).
    StallMidScan,
    /// Prints `hello world` instead of the handshake line, then keeps running.
    GarbageHandshake,
    /// Prints nothing and sleeps forever.
    NoHandshake,
    /// The first ScanResponse also carries a node with a bad CRN, one with
    /// properties that are not JSON and one with a NaN cost.
    MalformedNodes,
    /// Handshake answers `compatible: false`.
    Incompatible,
    /// PreflightCheck answers `ok: false`, naming missing credentials.
    PreflightFails,
    /// Scan leaves out the estate's `aws` region `us-west-2` and ends OK
    /// with the trailer that names it as not listed.
    UnlistedRegion,
    /// Scan ends OK with a trailer that is not a list of parts.
    BadTrailer,
}

/// Exit code of the `crash_mid_scan` mode.
pub const CRASH_EXIT_CODE: i32 = 3;

impl FailMode {
    pub fn parse(value: &str) -> Result<FailMode, String> {
        Ok(match value.trim() {
            "" => FailMode::None,
            "crash_mid_scan" => FailMode::CrashMidScan,
            "hang" => FailMode::Hang,
            "stall_mid_scan" => FailMode::StallMidScan,
            "garbage_handshake" => FailMode::GarbageHandshake,
            "no_handshake" => FailMode::NoHandshake,
            "malformed_nodes" => FailMode::MalformedNodes,
            "incompatible" => FailMode::Incompatible,
            "preflight_fails" => FailMode::PreflightFails,
            "unlisted_region" => FailMode::UnlistedRegion,
            "bad_trailer" => FailMode::BadTrailer,
            other => {
                return Err(format!(
                    "invalid SVC_MOCK_FAIL {other:?}: expected one of crash_mid_scan, hang, stall_mid_scan, garbage_handshake, \
                     no_handshake, malformed_nodes, incompatible, preflight_fails, unlisted_region, bad_trailer"
                ));
            }
        })
    }

    pub fn from_env() -> Result<FailMode, String> {
        FailMode::parse(&std::env::var("SVC_MOCK_FAIL").unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_mode_and_rejects_others() {
        assert_eq!(FailMode::parse(""), Ok(FailMode::None));
        assert_eq!(FailMode::parse("hang"), Ok(FailMode::Hang));
        assert_eq!(FailMode::parse("crash_mid_scan"), Ok(FailMode::CrashMidScan));
        assert_eq!(FailMode::parse("stall_mid_scan"), Ok(FailMode::StallMidScan));
        assert_eq!(FailMode::parse("incompatible"), Ok(FailMode::Incompatible));
        assert_eq!(FailMode::parse("preflight_fails"), Ok(FailMode::PreflightFails));
        assert_eq!(FailMode::parse("unlisted_region"), Ok(FailMode::UnlistedRegion));
        assert_eq!(FailMode::parse("bad_trailer"), Ok(FailMode::BadTrailer));
        assert!(FailMode::parse("explode").is_err());
    }
}

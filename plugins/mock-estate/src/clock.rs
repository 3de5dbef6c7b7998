//! The estate's fixed time base. Timestamps never come from the wall clock:
//! epoch 0 is [`REFERENCE_TIME`] and every later epoch is [`EPOCH_SECS`] on.

/// Unix seconds of epoch 0: 2025-01-01T00:00:00Z.
pub const REFERENCE_TIME: u64 = 1_735_689_600;
/// Simulated time between two epochs (one scan an hour).
pub const EPOCH_SECS: u64 = 3_600;
/// Seconds in a day.
pub(crate) const DAY: u64 = 86_400;

/// Simulated Unix seconds at `epoch`.
pub fn epoch_time(epoch: u64) -> u64 {
    REFERENCE_TIME.saturating_add(epoch.saturating_mul(EPOCH_SECS))
}

/// An RFC 3339 UTC timestamp (`2025-01-01T00:00:00Z`) on the stack.
pub(crate) struct Stamp([u8; 20]);

impl Stamp {
    pub(crate) fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).unwrap_or("1970-01-01T00:00:00Z")
    }
}

/// Formats Unix seconds (years 1970..=9999).
pub(crate) fn rfc3339(ts: u64) -> Stamp {
    let days = ts / DAY;
    let secs = ts % DAY;
    let (y, m, d) = civil_from_days(days);
    let mut b = *b"0000-00-00T00:00:00Z";
    let mut put = |at: usize, width: usize, mut v: u64| {
        for i in (0..width).rev() {
            b[at + i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, 4, y.min(9999));
    put(5, 2, m);
    put(8, 2, d);
    put(11, 2, secs / 3600);
    put(14, 2, secs / 60 % 60);
    put(17, 2, secs % 60);
    Stamp(b)
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian
/// (H. Hinnant's `civil_from_days`).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339(0).as_str(), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(REFERENCE_TIME).as_str(), "2025-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400).as_str(), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_709_251_199).as_str(), "2024-02-29T23:59:59Z");
        assert_eq!(rfc3339(epoch_time(25)).as_str(), "2025-01-02T01:00:00Z");
    }
}

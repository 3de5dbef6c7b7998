//! Time parameters: an RFC 3339 time, the history's `since` and `until`.

use std::time::Duration;

use serde::{Deserialize, Deserializer};
use utoipa::openapi::{RefOr, Schema};

use super::{NAME, ParamValue, own, text};
use crate::error::ApiError;
use crate::routes::parse_rfc3339;

/// An RFC 3339 time, in microseconds since the epoch. A `+` of a UTC offset
/// that arrived unescaped (and so decoded as a space) is accepted; an empty
/// value counts as missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Time(pub u64);

impl ParamValue for Time {
    fn parse(raw: &str) -> Result<Self, String> {
        let raw = raw.trim();
        if raw.is_empty() {
            return Err(missing_time(NAME));
        }
        parse_rfc3339(raw)
            .or_else(|| parse_rfc3339(&raw.replace(' ', "+")))
            .map(Time)
            .ok_or_else(|| format!("invalid {NAME} {raw:?}: expected an RFC 3339 time"))
    }
}

impl utoipa::PartialSchema for Time {
    fn schema() -> RefOr<Schema> {
        crate::wire::input::epoch_time()
    }
}

fn missing_time(name: &str) -> String {
    format!("missing {name}: expected an RFC 3339 time")
}

/// A required time parameter: 400 when it was not given.
pub fn required_time(t: Option<Time>, name: &str) -> Result<u64, ApiError> {
    t.map(|t| t.0).ok_or_else(|| ApiError::bad_request(missing_time(name)))
}

/// The history `since`: a duration before now (`3d`, `12h`, `30m`, `45s`,
/// `1h30m`) or an RFC 3339 time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Since {
    Ago(Duration),
    /// Microseconds since the epoch.
    At(u64),
}

impl Since {
    /// Microseconds since the epoch, `now_us` anchoring a duration.
    pub fn at(self, now_us: u64) -> u64 {
        match self {
            Since::Ago(d) => now_us.saturating_sub(u64::try_from(d.as_micros()).unwrap_or(u64::MAX)),
            Since::At(us) => us,
        }
    }
}

impl ParamValue for Since {
    fn parse(raw: &str) -> Result<Self, String> {
        if let Ok(d) = humantime::parse_duration(raw) {
            return Ok(Since::Ago(d));
        }
        parse_rfc3339(raw).map(Since::At).ok_or_else(|| {
            format!("invalid since {raw:?}: expected a duration such as 3d, 12h, 30m or 45s, or an RFC 3339 time")
        })
    }
}

impl utoipa::PartialSchema for Since {
    fn schema() -> RefOr<Schema> {
        text(None)
    }
}

/// The history `until`: an RFC 3339 time, in microseconds since the epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Until(pub u64);

impl ParamValue for Until {
    fn parse(raw: &str) -> Result<Self, String> {
        parse_rfc3339(raw)
            .map(Until)
            .ok_or_else(|| format!("invalid until {raw:?}: expected an RFC 3339 time such as 2026-01-02T15:04:05Z"))
    }
}

impl utoipa::PartialSchema for Until {
    fn schema() -> RefOr<Schema> {
        crate::wire::input::epoch_time()
    }
}

deserialize_via_parse!(Time, Since, Until);
super::to_schema!(Time, Since, Until);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_parse_with_an_unescaped_plus() {
        assert_eq!(Time::parse("1970-01-01T00:00:01Z"), Ok(Time(1_000_000)));
        assert_eq!(Time::parse("1970-01-01T01:00:01 01:00"), Ok(Time(1_000_000)));
        for bad in ["", "yesterday", "1969-12-31T23:59:59Z"] {
            assert!(Time::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn since_accepts_durations_and_times() {
        const DAY: u64 = 86_400 * 1_000_000;
        let now = 10 * DAY;
        let at = |s: &str| Since::parse(s).map(|s| s.at(now));
        assert_eq!(at("3d"), Ok(7 * DAY));
        assert_eq!(at("12h"), Ok(now - 12 * 3_600_000_000));
        assert_eq!(at("30m"), Ok(now - 30 * 60_000_000));
        assert_eq!(at("45s"), Ok(now - 45_000_000));
        assert_eq!(at("1000d"), Ok(0));
        assert_eq!(at("1970-01-02T00:00:00Z"), Ok(DAY));
        for bad in ["yesterday", "3", "-3d", "2026-13-01T00:00:00Z"] {
            assert!(Since::parse(bad).is_err(), "{bad}");
        }
    }
}

//! Durations and times as people write and read them: `7d`, `1h30m` or
//! seconds on the way in; RFC 3339 with how long ago on the way out, never
//! raw Unix numbers.

use std::time::Duration;

use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use serde_json::Value;

/// A point in time given on the command line.
pub type Time = DateTime<Utc>;

/// A duration: `7d`, `12h`, `1h30m`, `90s`, or a whole number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if let Ok(secs) = text.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    humantime::parse_duration(text)
        .map_err(|e| format!("invalid duration {text:?}: {e} (write it as 7d, 12h, 1h30m or seconds)"))
}

/// A time: RFC 3339, a duration ago (`2h`, `3d`), `now` or `yesterday`
/// (this time of day, a day ago).
pub fn parse_time(text: &str) -> Result<Time, String> {
    parse_time_at(text, Utc::now())
}

fn parse_time_at(text: &str, now: Time) -> Result<Time, String> {
    let text = text.trim();
    match text {
        "now" => return Ok(now),
        "yesterday" => return Ok(now - TimeDelta::days(1)),
        _ => {}
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&Utc));
    }
    let ago = text.strip_suffix(" ago").unwrap_or(text);
    let d = humantime::parse_duration(ago).map_err(|_| {
        format!(
            "invalid time {text:?}: write RFC 3339 (2026-11-30T10:00:00Z), a duration ago (2h, 3d), now or yesterday"
        )
    })?;
    let d = TimeDelta::from_std(d).map_err(|_| format!("invalid time {text:?}: too long ago"))?;
    Ok(now - d)
}

/// A time for the API: RFC 3339 in UTC, to the second.
pub fn rfc3339(t: &Time) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// A time for people: `2026-11-30T11:02:09Z (3 minutes ago)`.
pub fn show(t: &Time) -> String {
    format!("{} ({})", rfc3339(t), ago(*t, Utc::now()))
}

/// How long before `now` a time was, in its largest unit.
fn ago(t: Time, now: Time) -> String {
    let secs = (now - t).num_seconds();
    let (n, future) = if secs < 0 { (-secs, true) } else { (secs, false) };
    let (count, unit) = match n {
        0..=59 => (n, "second"),
        60..=3599 => (n / 60, "minute"),
        3600..=86_399 => (n / 3600, "hour"),
        _ => (n / 86_400, "day"),
    };
    if n < 2 {
        return "just now".to_owned();
    }
    let plural = if count == 1 { "" } else { "s" };
    if future {
        format!("in {count} {unit}{plural}")
    } else {
        format!("{count} {unit}{plural} ago")
    }
}

/// A time as the API sends it: RFC 3339 text, or a Unix number in seconds,
/// milliseconds or microseconds (told apart by size).
pub fn from_value(v: &Value) -> Option<Time> {
    if let Some(text) = v.as_str() {
        return DateTime::parse_from_rfc3339(text).ok().map(|t| t.with_timezone(&Utc));
    }
    let n = v.as_i64()?;
    match n.unsigned_abs() {
        0 => None,
        1..=99_999_999_999 => DateTime::from_timestamp(n, 0),
        100_000_000_000..=99_999_999_999_999 => DateTime::from_timestamp_millis(n),
        _ => DateTime::from_timestamp_micros(n),
    }
}

/// The time under `key` for people, or what was there when it is no time.
pub fn field(v: &Value, key: &str) -> String {
    match v.get(key) {
        None | Some(Value::Null) => String::new(),
        Some(x) => from_value(x).map_or_else(|| super::output::s(v, key), |t| show(&t)),
    }
}

/// The time under `key` as RFC 3339 only (for table columns).
pub fn column(v: &Value, key: &str) -> String {
    match v.get(key) {
        None | Some(Value::Null) => String::new(),
        Some(x) => from_value(x).map_or_else(|| super::output::s(v, key), |t| rfc3339(&t)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_units_or_seconds() {
        assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(7 * 86_400)));
        assert_eq!(parse_duration("600"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn times_take_rfc3339_and_relative_forms() {
        let now = DateTime::parse_from_rfc3339("2026-11-30T12:00:00Z").map(|t| t.with_timezone(&Utc));
        let now = now.unwrap_or_default();
        let at = |s| parse_time_at(s, now).map(|t| rfc3339(&t));
        assert_eq!(at("2h").as_deref(), Ok("2026-11-30T10:00:00Z"));
        assert_eq!(at("2h ago").as_deref(), Ok("2026-11-30T10:00:00Z"));
        assert_eq!(at("yesterday").as_deref(), Ok("2026-11-29T12:00:00Z"));
        assert_eq!(at("2026-01-02T03:04:05+01:00").as_deref(), Ok("2026-01-02T02:04:05Z"));
        assert!(at("last tuesday").is_err());
        assert_eq!(ago(now - TimeDelta::minutes(3), now), "3 minutes ago");
    }

    #[test]
    fn unix_numbers_of_any_unit_are_one_time() {
        let want = Some("2026-11-30T11:02:09Z".to_owned());
        for n in [1_796_036_529_i64, 1_796_036_529_000, 1_796_036_529_000_000] {
            assert_eq!(from_value(&Value::from(n)).map(|t| rfc3339(&t)), want, "{n}");
        }
    }
}

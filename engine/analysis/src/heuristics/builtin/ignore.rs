//! The `svc:ignore` tag: an owner's word that a resource is not to be
//! reported as waste.
//!
//! | value | meaning |
//! |---|---|
//! | `true` | ignored for good |
//! | a date, `2026-12-31` (or an RFC 3339 time) | ignored until then |
//! | `Nd`, `30d` | ignored for N days from when the resource last changed (setting the tag is a change) |
//! | `justified:<reason>` | ignored for good, with the reason kept |
//!
//! Any other value (`false`, an unreadable date) ignores nothing, so a typo
//! never hides waste silently: the finding still shows.

use super::view::{DAY, Node, parse_time};

/// Why a node was kept out of the built-in rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ignore {
    Always,
    /// Until this Unix second.
    Until(u64),
    Justified(String),
}

impl Ignore {
    /// The tag's meaning in words.
    pub fn describe(&self) -> String {
        match self {
            Ignore::Always => "svc:ignore=true".to_owned(),
            Ignore::Until(ts) => format!("svc:ignore until {}", date(*ts)),
            Ignore::Justified(why) => format!("justified: {why}"),
        }
    }
}

/// What the tag value says, at `now_s`, for a resource that last changed at
/// `changed_s`; `None` when it ignores nothing (expired, `false`, unreadable).
pub fn parse(value: &str, changed_s: u64, now_s: u64) -> Option<Ignore> {
    let v = value.trim();
    if v.eq_ignore_ascii_case("true") || v.eq_ignore_ascii_case("yes") {
        return Some(Ignore::Always);
    }
    if let Some(why) = v.strip_prefix("justified:") {
        return Some(Ignore::Justified(why.trim().to_owned()));
    }
    let until = if let Some(n) = v.strip_suffix(['d', 'D']) {
        let n: u64 = n.trim().parse().ok()?;
        changed_s.saturating_add(n.saturating_mul(DAY))
    } else {
        let t = parse_time(v)?;
        // A bare date ignores through the end of that day.
        if v.len() == 10 { t + DAY } else { t }
    };
    (now_s < until).then_some(Ignore::Until(until))
}

/// Whether the node's `svc:ignore` tag keeps it out of the rules now.
pub fn check(node: &Node<'_>) -> Option<Ignore> {
    let value = node.tag(node.keys().svc_ignore)?;
    let ignore = parse(value, node.changed_s(), node.now_s());
    if let Some(Ignore::Until(until)) = ignore {
        node.holds_until(until);
    }
    ignore
}

/// `2026-12-31`.
pub fn date(ts: u64) -> String {
    let days = ts / DAY;
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_767_225_600; // 2026-01-01

    #[test]
    fn every_form_of_the_tag() {
        assert_eq!(parse("true", 0, NOW), Some(Ignore::Always));
        assert_eq!(parse(" TRUE ", 0, NOW), Some(Ignore::Always));
        assert_eq!(
            parse("justified: dr standby", 0, NOW),
            Some(Ignore::Justified("dr standby".into()))
        );
        assert_eq!(parse("2026-01-01", 0, NOW), Some(Ignore::Until(NOW + DAY)));
        assert_eq!(parse("2025-12-31", 0, NOW), None, "expired");
        assert_eq!(parse("30d", NOW - 10 * DAY, NOW), Some(Ignore::Until(NOW + 20 * DAY)));
        assert_eq!(parse("30d", NOW - 31 * DAY, NOW), None, "expired");
        for nothing in ["false", "", "soon", "-3d", "2026-02-30x"] {
            assert_eq!(parse(nothing, 0, NOW), None, "{nothing}");
        }
        assert_eq!(date(NOW), "2026-01-01");
        assert_eq!(Ignore::Until(NOW).describe(), "svc:ignore until 2026-01-01");
    }
}

//! CRNs read through their prefix: the text before the physical id
//! (`crn:svc:<provider>:<region>:<service>:<kind>:<account>:`, or the plugin
//! form's five segments) is shared by thousands of a scan's CRNs, so once one
//! CRN with that prefix has been parsed and validated in full, the next ones
//! only need their prefix found and looked up, and their id checked.
//!
//! What is accepted, and how it is split, is exactly [`CrnRef::parse`]'s: a
//! CRN the fast path is not sure of (an unknown prefix, an id that is not
//! printable ASCII, anything malformed) goes through `CrnRef::parse`, which
//! decides and words the rejection.

use svc_engine::crn::{CrnError, CrnRef, MAX_CRN_LEN};

/// Where the physical id of `text` starts, by the rule [`CrnRef::parse`]
/// splits with: after `crn:` and an optional `svc:`, six or more segments are
/// the graph form (the id follows the fifth colon) and exactly five the
/// plugin form (the id follows the fourth). `None` when `text` is neither.
pub(super) fn id_start(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    if !b.starts_with(b"crn:") {
        return None;
    }
    let mut at = 4;
    if b[at..].starts_with(b"svc:") {
        at += 4;
    }
    let mut colons = 0;
    let mut fourth = 0;
    for (i, c) in b.iter().enumerate().skip(at) {
        if *c == b':' {
            colons += 1;
            match colons {
                4 => fourth = i + 1,
                5 => return Some(i + 1),
                _ => {}
            }
        }
    }
    (colons == 4).then_some(fourth)
}

/// Whether `id` is accepted as a physical id without a closer look: not
/// empty, printable ASCII (neither whitespace nor a control character).
pub(super) fn plain_id(id: &[u8]) -> bool {
    !id.is_empty() && id.iter().all(|b| (0x21..0x7f).contains(b))
}

/// `text` split into its prefix and id when the fast path may answer for it
/// (see [`id_start`] and [`plain_id`]); `None` sends it to [`CrnRef::parse`].
pub(super) fn split(text: &str) -> Option<(&str, &str)> {
    if text.len() > MAX_CRN_LEN {
        return None;
    }
    let at = id_start(text)?;
    let (prefix, id) = (text.get(..at)?, text.get(at..)?);
    plain_id(id.as_bytes()).then_some((prefix, id))
}

/// The full parse, for a CRN whose prefix is not known yet; its prefix is
/// the text before the id it parsed.
pub(super) fn parse(text: &str) -> Result<(CrnRef<'_>, &str), CrnError> {
    let crn = CrnRef::parse(text)?;
    let prefix = text.strip_suffix(crn.id).unwrap_or("");
    Ok((crn, prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The split agrees with `CrnRef::parse` wherever it answers, and
    /// whether a split CRN parses depends on its prefix alone (so one parse
    /// per prefix vouches for every later CRN with that prefix).
    fn agrees(text: &str) {
        match (split(text), CrnRef::parse(text)) {
            (Some((prefix, id)), Ok(crn)) => {
                assert_eq!(crn.id, id, "{text:?}");
                assert_eq!(parse(text).map(|(_, p)| p), Ok(prefix), "{text:?}");
            }
            (Some((prefix, _)), Err(_)) => {
                let other = format!("{prefix}other-id");
                assert!(CrnRef::parse(&other).is_err(), "{text:?} fails but {other:?} parses");
            }
            (None, Ok(crn)) => {
                // Only ids the fast path does not vouch for.
                assert!(!plain_id(crn.id.as_bytes()), "{text:?} parses but was not split");
            }
            (None, Err(_)) => {}
        }
    }

    #[test]
    fn ids_start_where_the_parser_puts_them() {
        for text in [
            "crn:svc:aws:us-east-1:123456789012:volume:vol-1",
            "crn:aws:us-east-1:123456789012:volume:vol-3",
            "crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-4",
            "crn:svc:aws:us-east-1:ec2:volume:123456789012:arn:aws:ec2:vol-5",
            "crn:svc:aws:us-east-1:123456789012:role:arn:aws:iam::1:role/x",
            "crn:svc:svc:r:a:t:id",
            "crn:svc:aws:us-east-1:1:volume:",
            "crn:svc:aws:us-east-1:1:volume:vol 1",
            "crn:svc:aws:us-east-1:1:volume:vol-é",
            "crn:svc:aws::1:volume:vol-1",
            "crn:svc:aws:us east:1:volume:vol-1",
            "crn:svc:aws:us-east-1:1:volume",
            "crn:svc:aws",
            "crn:",
            "crn:svc:",
            "arn:svc:aws:us-east-1:1:volume:vol-1",
            "",
        ] {
            agrees(text);
        }
        let long = format!("crn:svc:aws:us-east-1:1:volume:{}", "x".repeat(MAX_CRN_LEN));
        assert_eq!(split(&long), None);
        assert!(CrnRef::parse(&long).is_err());
    }

    proptest::proptest! {
        #[test]
        fn the_split_agrees_with_the_parser_on_any_text(text in "(crn:)?(svc:)?([a-c:\\- é\\t]{0,6}:){0,7}[a-c:\\- é\\t]{0,6}") {
            agrees(&text);
        }
    }
}

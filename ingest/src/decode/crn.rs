//! CRNs read through their prefix: the text before the physical id
//! (`crn:svc:<provider>:<region>:<service>:<kind>:<account>:`, or the plugin
//! form's five segments) is shared by thousands of a scan's CRNs, so once one
//! CRN with that prefix has been parsed and validated in full, the next ones
//! only need their prefix found and looked up, and their id checked. A
//! graph-form CRN is looked up in three pieces instead ([`Pieces`]: place,
//! type, account), which tables a fraction of the size of the prefixes'
//! hold; a piece is known once a CRN holding it has parsed.
//!
//! What is accepted, and how it is split, is exactly [`CrnRef::parse`]'s: a
//! CRN the fast path is not sure of (an unknown prefix, an id that is not
//! printable ASCII, anything malformed) goes through `CrnRef::parse`, which
//! decides and words the rejection.
//!
//! The split reads bytes: a CRN the fast path answers for is its known
//! prefix (text of a CRN that parsed) and a printable ASCII id, so it is
//! text without a pass of its own to check that; any other is checked
//! before it is parsed.

use svc_engine::crn::{CrnError, CrnRef, MAX_CRN_LEN};

const LOW7: u64 = u64::from_ne_bytes([0x7f; 8]);
const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);

fn word(chunk: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(chunk);
    u64::from_le_bytes(bytes)
}

/// The high bit of exactly those bytes of `w` that are `c`.
fn bytes_equal(w: u64, c: u8) -> u64 {
    let x = w ^ (ONES * u64::from(c));
    !(((x & LOW7) + LOW7) | x | LOW7)
}

/// Where the fixed segments of `text` start (after `crn:` and an optional
/// `svc:`), the colons after them (the first five, fewer when there are
/// fewer), and how many there are. Colons are found eight bytes at a
/// time. `None` when `text` does not start with `crn:`.
fn segment_colons(b: &[u8]) -> Option<(usize, [usize; 5], usize)> {
    if !b.starts_with(b"crn:") {
        return None;
    }
    let mut at = 4;
    if b[at..].starts_with(b"svc:") {
        at += 4;
    }
    let mut colons = [0usize; 5];
    let mut found = 0;
    let rest = &b[at..];
    let mut chunks = rest.chunks_exact(8);
    for (k, chunk) in (&mut chunks).enumerate() {
        let mut hits = bytes_equal(word(chunk), b':');
        while hits != 0 {
            colons[found] = at + 8 * k + (hits.trailing_zeros() / 8) as usize;
            found += 1;
            if found == colons.len() {
                return Some((at, colons, found));
            }
            hits &= hits - 1;
        }
    }
    let tail = at + rest.len() - chunks.remainder().len();
    for (i, c) in chunks.remainder().iter().enumerate() {
        if *c == b':' {
            colons[found] = tail + i;
            found += 1;
            if found == colons.len() {
                break;
            }
        }
    }
    Some((at, colons, found))
}

/// Where the physical id of `text` starts, by the rule [`CrnRef::parse`]
/// splits with: after `crn:` and an optional `svc:`, six or more segments are
/// the graph form (the id follows the fifth colon) and exactly five the
/// plugin form (the id follows the fourth). `None` when `text` is neither.
#[cfg(test)]
fn id_start(text: &str) -> Option<usize> {
    match segment_colons(text.as_bytes())? {
        (_, colons, 5) => Some(colons[4] + 1),
        (_, colons, 4) => Some(colons[3] + 1),
        _ => None,
    }
}

/// `id` as text when it is accepted as a physical id without a closer
/// look: not empty, printable ASCII (neither whitespace nor a control
/// character). Checked eight bytes at a time.
#[inline(always)]
pub(super) fn plain_id(id: &[u8]) -> Option<&str> {
    let mut chunks = id.chunks_exact(8);
    for chunk in &mut chunks {
        let w = word(chunk);
        // Bytes below 0x21 (any hit means one exists), DEL, and anything
        // with the high bit.
        let below = w.wrapping_sub(ONES * 0x21) & !w & HIGHS;
        if below | bytes_equal(w, 0x7f) | (w & HIGHS) != 0 {
            return None;
        }
    }
    if id.is_empty() || !chunks.remainder().iter().all(|b| (0x21..0x7f).contains(b)) {
        return None;
    }
    #[allow(unsafe_code)]
    // SAFETY: every byte of `id` is in 0x21..0x7f, checked just above:
    // ASCII, so UTF-8.
    let text = unsafe { std::str::from_utf8_unchecked(id) };
    Some(text)
}

/// A graph-form CRN's fixed segments in the three pieces its text keeps
/// them in: `<provider>:<region>`, `<service>:<kind>`, `<account>`; and its
/// id, printable ASCII.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct Pieces<'a> {
    pub place: &'a [u8],
    pub kind: &'a [u8],
    pub account: &'a [u8],
    pub id: &'a str,
}

/// A CRN split where the fast path may answer for it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Split<'a> {
    /// The graph form, in its pieces.
    Graph(Pieces<'a>),
    /// The plugin form: the bytes before the id, and the id.
    Plugin(&'a [u8], &'a str),
}

#[cfg(test)]
impl<'a> Split<'a> {
    /// The physical id.
    fn id(&self) -> &'a str {
        match *self {
            Split::Graph(p) => p.id,
            Split::Plugin(_, id) => id,
        }
    }
}

/// `text` split by the rule [`CrnRef::parse`] splits with (after `crn:`
/// and an optional `svc:`, six or more segments are the graph form, the id
/// following the fifth colon, and exactly five the plugin form, the id
/// following the fourth), when its id is one the fast path may answer for
/// ([`plain_id`]); `None` sends it to [`CrnRef::parse`]. Whether the fixed
/// segments are valid is not checked: whether a split graph-form CRN
/// parses depends on them alone (one too long once `svc:` is added is not
/// split), so a piece taken from a CRN that parsed is valid in any other;
/// a plugin-form one also needs its graph form, longer by a length its
/// prefix decides, within [`MAX_CRN_LEN`], which the caller checks.
pub(super) fn split(text: &[u8]) -> Option<Split<'_>> {
    if text.len() > MAX_CRN_LEN {
        return None;
    }
    let id = |at: usize| text.get(at..).and_then(plain_id);
    Some(match segment_colons(text)? {
        // Without `svc:`, the graph form is that much longer.
        (at, _, 5) if text.len() + ("crn:svc:".len() - at) > MAX_CRN_LEN => return None,
        (at, [_, second, _, fourth, fifth], 5) => Split::Graph(Pieces {
            place: text.get(at..second)?,
            kind: text.get(second + 1..fourth)?,
            account: text.get(fourth + 1..fifth)?,
            id: id(fifth + 1)?,
        }),
        (_, colons, 4) => Split::Plugin(text.get(..colons[3] + 1)?, id(colons[3] + 1)?),
        _ => return None,
    })
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
    use svc_engine::crn::CrnForm;

    use super::*;

    /// The split agrees with `CrnRef::parse` wherever it answers, and
    /// whether a split CRN parses depends on its prefix alone (so one parse
    /// per prefix vouches for every later CRN with that prefix).
    fn agrees(text: &str) {
        match (split(text.as_bytes()), CrnRef::parse_with_form(text)) {
            (Some(split), Ok((crn, form))) => {
                let prefix = &text[..text.len() - crn.id.len()];
                assert_eq!(id_start(text), Some(prefix.len()), "{text:?}");
                assert_eq!(parse(text).map(|(_, p)| p), Ok(prefix), "{text:?}");
                match split {
                    Split::Graph(p) => {
                        assert_eq!(form, CrnForm::Graph, "{text:?}");
                        let place = format!("{}:{}", crn.provider, crn.region);
                        let kind = format!("{}:{}", crn.service, crn.kind);
                        assert_eq!(
                            (p.place, p.kind, p.account, p.id),
                            (place.as_bytes(), kind.as_bytes(), crn.account.as_bytes(), crn.id),
                            "{text:?}"
                        );
                    }
                    Split::Plugin(p, id) => {
                        assert_eq!(form, CrnForm::Plugin, "{text:?}");
                        assert_eq!((p, id), (prefix.as_bytes(), crn.id), "{text:?}");
                    }
                }
            }
            (Some(split @ Split::Plugin(..)), Err(CrnError::TooLong { .. })) => {
                // Too long in graph form, by the length of its id: the
                // same prefix with a one-byte id parses.
                let short = format!("{}i", &text[..text.len() - split.id().len()]);
                let (crn, _) = parse(&short).unwrap_or_else(|e| panic!("{short:?}: {e}"));
                assert!(crn.graph_len() - 1 + split.id().len() > MAX_CRN_LEN, "{text:?}");
            }
            (Some(split), Err(_)) => {
                // Whether it parses depends on its fixed segments alone.
                let other = format!("{}other-id", &text[..text.len() - split.id().len()]);
                assert!(split_form(&other) == split_form(text), "{text:?}");
                assert!(CrnRef::parse(&other).is_err(), "{text:?} fails but {other:?} parses");
            }
            (None, Ok((crn, _))) => {
                // Only ids the fast path does not vouch for.
                assert!(
                    plain_id(crn.id.as_bytes()).is_none(),
                    "{text:?} parses but was not split"
                );
            }
            (None, Err(_)) => {}
        }
    }

    fn split_form(text: &str) -> Option<bool> {
        split(text.as_bytes()).map(|s| matches!(s, Split::Graph(_)))
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
        assert_eq!(split(long.as_bytes()), None);
        assert!(CrnRef::parse(&long).is_err());
        // At the limit in graph form, and one byte past it, in each form.
        for prefix in [
            "crn:svc:aws:us-east-1:ec2:volume:1:",
            "crn:aws:us-east-1:ec2:volume:1:",
            "crn:svc:aws:us-east-1:1:volume:",
            "crn:aws:us-east-1:1:volume:",
            "crn:gcp:r:1:widget:",
        ] {
            for graph_len in [MAX_CRN_LEN - 1, MAX_CRN_LEN, MAX_CRN_LEN + 1] {
                let extra = CrnRef::parse(&format!("{prefix}i")).unwrap().graph_len() - prefix.len() - 1;
                let text = format!("{prefix}{}", "x".repeat(graph_len - extra - prefix.len()));
                assert_eq!(
                    CrnRef::parse(&text).is_ok(),
                    graph_len <= MAX_CRN_LEN,
                    "{prefix} {graph_len}"
                );
                agrees(&text);
            }
        }
    }

    #[test]
    fn plain_ids_are_printable_ascii() {
        let text = b"vol-0123456789abcdef/arn:aws:x";
        for len in 0..text.len() {
            assert!(plain_id(&text[..len]).is_some() == (len > 0), "{len}");
            for bad in [0x00, 0x09, b' ', 0x7f, 0x80, 0xc3, 0xff] {
                for at in 0..=len {
                    let mut id = text[..len].to_vec();
                    id.insert(at, bad);
                    assert!(plain_id(&id).is_none(), "{id:?}");
                }
            }
            for good in [0x21, b'~', b':'] {
                let mut id = text[..len].to_vec();
                id.push(good);
                assert_eq!(plain_id(&id).map(str::as_bytes), Some(&id[..]), "{id:?}");
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn plain_ids_agree_with_a_byte_loop(id in proptest::collection::vec(proptest::num::u8::ANY, 0..30)) {
            let plain = !id.is_empty() && id.iter().all(|b| (0x21..0x7f).contains(b));
            proptest::prop_assert_eq!(plain_id(&id).map(str::as_bytes), plain.then_some(&id[..]));
        }


        #[test]
        fn the_split_agrees_with_the_parser_on_any_text(text in "(crn:)?(svc:)?([a-c:\\- é\\t]{0,6}:){0,7}[a-c:\\- é\\t]{0,6}") {
            agrees(&text);
        }
    }
}

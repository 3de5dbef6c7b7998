//! What the handlers accept in a request's text fields, written into the
//! OpenAPI document as JSON Schema (`pattern`, `minLength`, `maxLength`),
//! so the document refuses what the server refuses: a CRN that does not
//! parse, an actor or a reason with a control character or a bidirectional
//! mark, a hash that is not SHA-256 hex, a duration that is no duration, a
//! cursor that is no cursor, a time before the Unix epoch.
//!
//! Each type here is a schema only (`value_type = ..` on the field or
//! parameter); the handlers read the plain strings and check them as
//! before. A pattern is written for the regular expression dialects of
//! JSON Schema, Python and Rust alike: `\xNN` and `\uNNNN` escapes, no
//! lookaround, no class shorthands.

use std::sync::LazyLock;

use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::{RefOr, Schema};

use svc_engine::crn::MAX_CRN_LEN;

/// Longest actor name, in characters.
pub const MAX_ACTOR_CHARS: usize = 128;
/// Longest free text (a reason, a reason code), in characters.
pub const MAX_TEXT_CHARS: usize = 1024;

/// Characters `char::is_control` is true of (Unicode `Cc`).
const CONTROLS: &str = r"\x00-\x1f\x7f-\x9f";
/// The control characters free text refuses: all but tab and line feed.
const TEXT_CONTROLS: &str = r"\x00-\x08\x0b-\x1f\x7f-\x9f";
/// Bidirectional marks, embeddings, overrides and isolates.
const BIDI: &str = r"\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069";
/// Characters `char::is_whitespace` is true of beyond the controls.
const SPACES: &str = r"\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000";
/// A fixed CRN segment.
const SEGMENT: &str = r"[A-Za-z0-9._/-]+";
/// A fixed CRN segment other than `svc` (which would be read as the namespace).
const SEGMENT_NOT_SVC: &str = r"(?:[A-Za-z0-9._/-]{1,2}|[A-Za-z0-9._/-]{4,}|[A-Za-rt-z0-9._/-][A-Za-z0-9._/-]{2}|s[A-Za-uw-z0-9._/-][A-Za-z0-9._/-]|sv[A-Za-bd-z0-9._/-])";

/// The CRN forms [`svc_engine::Crn::parse`] accepts: `crn:`, the optional
/// `svc` segment, then either six segments (the graph form, whose physical
/// id may hold colons) or five (the plugin form); fixed segments of
/// `[A-Za-z0-9._/-]`, a physical id without whitespace or control characters.
pub static CRN_PATTERN: LazyLock<String> = LazyLock::new(|| {
    let id = format!("[^{CONTROLS}{SPACES}]+");
    let id_no_colon = format!("[^:{CONTROLS}{SPACES}]+");
    let forms = |first: &str| {
        format!(
            "{first}:{s}:{s}:{s}:{s}:{id}|{first}:{s}:{s}:{s}:{id_no_colon}",
            s = SEGMENT
        )
    };
    format!("^crn:(?:svc:(?:{})|(?:{}))$", forms(SEGMENT), forms(SEGMENT_NOT_SVC))
});

/// Actor names: no control character, no bidirectional mark.
pub static ACTOR_PATTERN: LazyLock<String> = LazyLock::new(|| format!("^[^{CONTROLS}{BIDI}]*$"));

/// Free text (reasons): no control character but tab and line feed, no
/// bidirectional mark.
pub static TEXT_PATTERN: LazyLock<String> = LazyLock::new(|| format!("^[^{TEXT_CONTROLS}{BIDI}]*$"));

/// Free text as [`TEXT_PATTERN`] with at least one character that is not
/// whitespace.
pub static NON_BLANK_TEXT_PATTERN: LazyLock<String> = LazyLock::new(|| {
    let any = format!("[^{TEXT_CONTROLS}{BIDI}]*");
    format!("^{any}[^{CONTROLS}{BIDI}{SPACES}]{any}$")
});

/// A query value with at least one character that is not whitespace.
pub static NON_BLANK_PATTERN: LazyLock<String> = LazyLock::new(|| format!("[^{CONTROLS}{SPACES}]"));

/// A duration as `humantime` reads it: numbers each with a unit, spaces
/// between them allowed (`20m`, `1h30m`, `2 days`).
pub const DURATION_PATTERN: &str = r"^[ ]*(?:[0-9]+[ ]*(?:nanos|nsec|ns|usec|us|millis|msec|ms|seconds|second|secs|sec|s|minutes|minute|mins|min|m|hours|hour|hrs|hr|h|days|day|d|weeks|week|wks|wk|w|months|month|M|years|year|yrs|yr|y)[ ]*)+$";

/// SHA-256 in hex, either case.
pub const SHA256_PATTERN: &str = "^[0-9A-Fa-f]{64}$";

/// An RFC 3339 time no earlier than the Unix epoch's year.
pub const EPOCH_TIME_PATTERN: &str = "^(?:19[7-9][0-9]|[2-9][0-9]{3})-";

/// Base64url without padding: whole groups of four, then two or three
/// characters whose unused bits are zero.
pub const BASE64URL_PATTERN: &str =
    "^(?:[A-Za-z0-9_-]{4})*(?:[A-Za-z0-9_-][AQgw]|[A-Za-z0-9_-]{2}[AEIMQUYcgkosw048])?$";

/// Base64url of eight bytes: a node cursor.
pub const NODE_CURSOR_PATTERN: &str = "^[A-Za-z0-9_-]{10}[AEIMQUYcgkosw048]$";

/// Base64url of a positive decimal number, with or without padding: a
/// history cursor.
pub const HISTORY_CURSOR_PATTERN: &str =
    "^(?:[A-Za-z0-9_-]{4})*(?:[A-Za-z0-9_-][AQgw]={0,2}|[A-Za-z0-9_-]{2}[AEIMQUYcgkosw048]=?)?$";

/// A policy rule id (`svc_engine::policy::check_id`): 1 to 128 letters,
/// digits, `.`, `_`, `-`, `:`.
pub const RULE_ID_PATTERN: &str = "^[A-Za-z0-9._:-]+$";

/// A policy rule id as routes naming an existing rule take it: pack rules
/// are `<pack>/<id>`.
pub const RULE_REF_PATTERN: &str = "^[A-Za-z0-9._:/-]+$";

fn text(pattern: &str, min: Option<usize>, max: Option<usize>, description: &str) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(description))
        .pattern(Some(pattern))
        .min_length(min)
        .max_length(max)
        .into()
}

/// Declares schema-only string types.
macro_rules! input_text {
    ($($(#[doc = $doc:literal])* $name:ident => $schema:expr;)*) => {$(
        $(#[doc = $doc])*
        pub struct $name;

        impl utoipa::PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                $schema
            }
        }

        impl utoipa::ToSchema for $name {}
    )*};
}

input_text! {
    /// A CRN a request names.
    CrnInput => text(
        &CRN_PATTERN,
        None,
        Some(MAX_CRN_LEN),
        "A CRN, graph form `crn:svc:<provider>:<region>:<service>:<kind>:<account>:<physical_id>` or plugin \
         form `crn:svc:<provider>:<region>:<account>:<type>:<id>`, with or without the `svc` segment; at most \
         2048 bytes (422 otherwise).",
    );
    /// Who decides.
    ActorInput => text(
        &ACTOR_PATTERN,
        None,
        Some(MAX_ACTOR_CHARS),
        "Who decides, recorded in the ledger (`api` when absent or blank): at most 128 characters, no control \
         character and no bidirectional mark (422 otherwise).",
    );
    /// An optional reason.
    ReasonInput => text(
        &TEXT_PATTERN,
        None,
        Some(MAX_TEXT_CHARS),
        "Free text recorded in the ledger: at most 1024 characters, no control character but tab and line \
         feed, no bidirectional mark (422 otherwise).",
    );
    /// A reason that must be given.
    RequiredReasonInput => text(
        &NON_BLANK_TEXT_PATTERN,
        Some(1),
        Some(MAX_TEXT_CHARS),
        "Free text recorded in the ledger, not blank: at most 1024 characters, no control character but tab \
         and line feed, no bidirectional mark (422 otherwise).",
    );
    /// A compensating payload hash.
    Sha256Input => text(
        SHA256_PATTERN,
        Some(64),
        Some(64),
        "A SHA-256 in hex (422 otherwise).",
    );
    /// A scan timeout.
    DurationInput => text(
        DURATION_PATTERN,
        Some(2),
        None,
        "How long each source may scan before it is cancelled, a duration such as `20m` or `1h30m` (default \
         10 minutes; from 1s to 365d, 400 otherwise).",
    );
    /// A provider a scan is limited to.
    ProviderInput => text(
        &NON_BLANK_PATTERN,
        Some(1),
        None,
        "Scan only the source serving this provider; 422 `no plugin registered for provider: <provider>` when \
         no active source serves it.",
    );
    /// A new policy rule's id.
    RuleIdInput => text(
        RULE_ID_PATTERN,
        Some(1),
        Some(svc_engine::policy::MAX_ID_BYTES),
        "1 to 128 letters, digits, `.`, `_`, `-` and `:` (422 otherwise).",
    );
    /// An existing policy rule's id.
    RuleRefInput => text(
        RULE_REF_PATTERN,
        Some(1),
        Some(svc_engine::policy::MAX_ID_BYTES),
        "A rule id; a pack's rules are `<pack>/<id>`.",
    );
    /// A CEL condition.
    ConditionInput => text(
        &NON_BLANK_PATTERN,
        Some(1),
        Some(svc_engine::policy::compile::MAX_CONDITION_BYTES),
        "A CEL condition, at most 4096 bytes (422 when it is blank, too long or does not compile).",
    );
}

/// A non-blank query filter.
pub fn non_blank() -> RefOr<Schema> {
    text(&NON_BLANK_PATTERN, Some(1), None, "Not blank.")
}

/// An RFC 3339 time no earlier than 1970.
pub fn epoch_time() -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
        .pattern(Some(EPOCH_TIME_PATTERN))
        .into()
}

/// A cursor of base64url text matching `pattern`.
pub fn cursor(pattern: &str) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(pattern))
        .min_length(Some(1))
        .into()
}

/// The ids of a reorder: at least one, each once.
pub fn rule_order() -> utoipa::openapi::schema::Array {
    utoipa::openapi::schema::ArrayBuilder::new()
        .items(<RuleRefInput as utoipa::PartialSchema>::schema())
        .min_items(Some(1))
        .unique_items(true)
        .description(Some("Rule ids, each once."))
        .build()
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;

    use super::*;
    use crate::routes::query::{HistoryCursor, NodeCursor};
    use crate::routes::remediation::checked;

    fn re(pattern: &str) -> regex::Regex {
        regex::Regex::new(pattern).unwrap_or_else(|e| panic!("{pattern}: {e}"))
    }

    /// Strings of `pieces` (a fixed sequence from a seed), after `prefix`.
    fn samples(prefix: &str, pieces: &[&str], count: usize, longest: u64) -> Vec<String> {
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        (0..count)
            .map(|_| {
                let mut s = prefix.to_owned();
                for _ in 0..next() % (longest + 1) {
                    s.push_str(pieces[(next() % pieces.len() as u64) as usize]);
                }
                s
            })
            .collect()
    }

    #[test]
    fn the_crn_pattern_accepts_exactly_what_the_parser_accepts() {
        let pattern = re(&CRN_PATTERN);
        let pieces = [
            ":", "a:", "a:", "aws:", "b/c:", "svc:", "s:", "sv:", "svcx:", "svc", "s", "sv", "a", "-", "/", ".", "_",
            "é", " ", "\t", "\u{85}", "\u{3000}", "\u{7f}", "\u{200e}", "x:y", "::", "*",
        ];
        let mut inputs = samples("crn:", &pieces, 40_000, 10);
        inputs.extend(
            [
                "crn:svc:aws:us-east-1:ec2:volume:123:vol-1",
                "crn:aws:us-east-1:ec2:volume:123:arn:aws:x/y",
                "crn:svc:aws:us-east-1:123:volume:vol-1",
                "crn:aws:us-east-1:123:volume:vol-1",
                "crn:svc:a:b:c:d",
                "crn:svc:svc:a:b:c:d",
                "crn:sva:a:b:c:d",
                "crn:svc:aws:r:s:k:a:",
                "crn:svc:aws:r:s:k:a:id with space",
                "crn:svc:aws::s:k:a:id",
                "svc:aws:r:s:k:a:id",
            ]
            .map(str::to_owned),
        );
        for s in &inputs {
            assert_eq!(
                pattern.is_match(s),
                svc_engine::Crn::parse(s).is_ok(),
                "{s:?}: the pattern and the parser disagree"
            );
        }
        let accepted = inputs.iter().filter(|s| pattern.is_match(s)).count();
        assert!(accepted > 100, "only {accepted} samples parse");
    }

    #[test]
    fn actor_and_reason_patterns_refuse_what_the_handlers_refuse() {
        let pieces = [
            "a", "é", " ", "\t", "\n", "\r", "\u{0}", "\u{1b}", "\u{7f}", "\u{85}", "\u{9f}", "\u{a0}", "\u{61c}",
            "\u{200e}", "\u{202e}", "\u{2066}", "\u{2069}", "\u{3000}", "😀",
        ];
        let actor = re(&ACTOR_PATTERN);
        let text = re(&TEXT_PATTERN);
        let required = re(&NON_BLANK_TEXT_PATTERN);
        for s in samples("", &pieces, 20_000, 8) {
            let ok = checked("actor", &s, MAX_ACTOR_CHARS, &[]).is_ok();
            assert_eq!(actor.is_match(&s), ok, "actor {s:?}");
            let ok = checked("reason", &s, MAX_TEXT_CHARS, &['\n', '\t']).is_ok();
            assert_eq!(text.is_match(&s), ok, "reason {s:?}");
            assert_eq!(required.is_match(&s), ok && !s.trim().is_empty(), "reason_code {s:?}");
        }
    }

    #[test]
    fn id_hash_and_cursor_patterns_agree_with_their_parsers() {
        let id = re(RULE_ID_PATTERN);
        let id_ref = re(RULE_REF_PATTERN);
        for s in samples("", &["a", "Z", "0", ".", "_", "-", ":", "/", " ", "é", "!"], 5_000, 6) {
            let short = s.len() <= svc_engine::policy::MAX_ID_BYTES;
            assert_eq!(
                id.is_match(&s) && short,
                svc_engine::policy::check_id(&s, false).is_ok(),
                "{s:?}"
            );
            assert_eq!(
                id_ref.is_match(&s) && short,
                svc_engine::policy::check_id(&s, true).is_ok(),
                "{s:?}"
            );
        }
        let hex = re(SHA256_PATTERN);
        assert!(hex.is_match(&"aB0".repeat(21).chars().chain(['f']).collect::<String>()));
        assert!(!hex.is_match(&"a".repeat(63)) && !hex.is_match(&"g".repeat(64)));

        let b64 = ["A", "Q", "g", "w", "E", "z", "_", "-", "0", "9", "=", "+", " "];
        let node = re(NODE_CURSOR_PATTERN);
        let any = re(BASE64URL_PATTERN);
        let history = re(HISTORY_CURSOR_PATTERN);
        let padded = base64::engine::GeneralPurpose::new(
            &base64::alphabet::URL_SAFE,
            base64::engine::GeneralPurposeConfig::new()
                .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
        );
        let mut inputs = samples("", &b64, 20_000, 12);
        inputs.push(NodeCursor::encode(svc_engine::NodeId::new(17, 4242, 3)));
        inputs.push(HistoryCursor::encode(100));
        for s in inputs.iter().filter(|s| !s.is_empty() && !s.contains(' ')) {
            assert_eq!(node.is_match(s), NodeCursor::parse_text(s).is_ok(), "node cursor {s:?}");
            let decodes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s).is_ok();
            assert_eq!(any.is_match(s), decodes, "crn cursor {s:?}");
            assert_eq!(history.is_match(s), padded.decode(s).is_ok(), "history cursor {s:?}");
        }
    }

    #[test]
    fn durations_and_times_the_patterns_allow_parse() {
        let duration = re(DURATION_PATTERN);
        for s in ["20m", "1h30m", "2 days", "1h 5s", "365d", "10 minutes"] {
            assert!(duration.is_match(s), "{s}");
            assert!(humantime::parse_duration(s).is_ok(), "{s}");
        }
        for s in ["", "soon", "-3d", "3", "1.5h"] {
            assert!(!duration.is_match(s), "{s}");
        }
        let time = re(EPOCH_TIME_PATTERN);
        for s in [
            "1970-01-01T00:00:00Z",
            "2026-11-29T03:22:08.733613Z",
            "9999-12-31T23:59:59+00:00",
        ] {
            assert!(time.is_match(s) && crate::routes::parse_rfc3339(s).is_some(), "{s}");
        }
        for s in ["1969-12-31T23:59:59Z", "0208-06-25T08:34:16Z"] {
            assert!(!time.is_match(s) && crate::routes::parse_rfc3339(s).is_none(), "{s}");
        }
    }
}

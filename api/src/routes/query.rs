//! Query parameters as types: the [`ApiQuery`] extractor and the value
//! types handlers declare their parameters with.
//!
//! A value type parses its own text and says what was wrong with it, so a
//! bad value answers 400 with a message that names the value
//! (`invalid limit "abc": expected an integer from 1 to 1000`). Anything
//! else that does not deserialize (a repeated parameter, an unknown one
//! where a route refuses those, a missing required one) answers 400
//! `invalid query: Failed to deserialize query string: ..`.
//!
//! Every type also describes itself for the OpenAPI document
//! ([`utoipa::PartialSchema`]), so a parameter's bounds and default are
//! written once, here.

use std::borrow::Cow;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::json;
use svc_engine::graph::Reachability;
use svc_engine::remediation::stage_named;
use svc_engine::store::ledger::{HISTORY_DEFAULT_LIMIT, HISTORY_MAX_LIMIT};
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::{RefOr, Schema};

/// Implements `Deserialize` for [`ParamValue`] types (defined before the
/// submodules, which use it too).
macro_rules! deserialize_via_parse {
    ($($ty:ty),* $(,)?) => {$(
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                own(d)
            }
        }
    )*};
}

mod cursor;
mod time;

pub use cursor::{CrnCursor, HistoryCursor, NodeCursor};
pub use time::{Since, Time, Until, required_time};

use crate::error::ApiError;

/// Starts the message of a value type's own error; see [`own`].
const OWN: char = '\u{0}';
/// Stands for the parameter's name in a value type's own message.
const NAME: &str = "\u{1}";

/// The query string deserialized as `T`; every failure is a 400 API error.
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or_default();
        let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
        serde_path_to_error::deserialize(de).map(ApiQuery).map_err(rejection)
    }
}

fn rejection(e: serde_path_to_error::Error<serde_urlencoded::de::Error>) -> ApiError {
    let text = e.inner().to_string();
    match text.strip_prefix(OWN) {
        Some(message) => ApiError::bad_request(message.replace(NAME, &e.path().to_string())),
        None => ApiError::bad_request(format!("invalid query: Failed to deserialize query string: {e}")),
    }
}

/// A query value that parses itself. Its error is the whole message
/// answered, where [`NAME`] stands for the parameter's name.
trait ParamValue: Sized {
    fn parse(raw: &str) -> Result<Self, String>;
}

/// Deserializes a [`ParamValue`] from the parameter's text.
fn own<'de, D: Deserializer<'de>, T: ParamValue>(d: D) -> Result<T, D::Error> {
    let raw = Cow::<str>::deserialize(d)?;
    T::parse(&raw).map_err(|m| D::Error::custom(format_args!("{OWN}{m}")))
}

/// For `#[serde(deserialize_with)]`: an empty value counts as absent.
pub(crate) fn blank_as_absent<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    let raw = Option::<String>::deserialize(d)?;
    match raw.filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(s) => T::deserialize(serde::de::value::StringDeserializer::<D::Error>::new(s)).map(Some),
    }
}

fn integer(min: u64, max: u64, default: Option<u64>) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .minimum(Some(min as f64))
        .maximum(Some(max as f64))
        .default(default.map(|d| json!(d)))
        .into()
}

fn text(format: Option<KnownFormat>) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .format(format.map(SchemaFormat::KnownFormat))
        .into()
}

fn one_of(values: &[&str]) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(values.iter().copied()))
        .into()
}

// ---------------------------------------------------------------- page sizes

/// A page size from 1 to `MAX`, `DEFAULT` when absent; surrounding blanks
/// are ignored, an empty value is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit<const DEFAULT: usize, const MAX: usize>(pub usize);

impl<const DEFAULT: usize, const MAX: usize> Default for Limit<DEFAULT, MAX> {
    fn default() -> Self {
        Limit(DEFAULT)
    }
}

impl<const DEFAULT: usize, const MAX: usize> ParamValue for Limit<DEFAULT, MAX> {
    fn parse(raw: &str) -> Result<Self, String> {
        match raw.trim().parse::<usize>() {
            Ok(n) if (1..=MAX).contains(&n) => Ok(Limit(n)),
            _ => Err(format!("invalid limit {raw:?}: expected an integer from 1 to {MAX}")),
        }
    }
}

impl<'de, const DEFAULT: usize, const MAX: usize> Deserialize<'de> for Limit<DEFAULT, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        own(d)
    }
}

impl<const DEFAULT: usize, const MAX: usize> utoipa::PartialSchema for Limit<DEFAULT, MAX> {
    fn schema() -> RefOr<Schema> {
        integer(1, MAX as u64, Some(DEFAULT as u64))
    }
}

impl<const DEFAULT: usize, const MAX: usize> utoipa::ToSchema for Limit<DEFAULT, MAX> {}

/// The page size of the history endpoints: 1 to 500, 100 when absent or
/// empty; the text must be the number alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HistoryLimit(pub usize);

impl Default for HistoryLimit {
    fn default() -> Self {
        HistoryLimit(HISTORY_DEFAULT_LIMIT)
    }
}

impl ParamValue for HistoryLimit {
    fn parse(raw: &str) -> Result<Self, String> {
        if raw.is_empty() {
            return Ok(HistoryLimit::default());
        }
        match raw.parse::<usize>() {
            Ok(n) if (1..=HISTORY_MAX_LIMIT).contains(&n) => Ok(HistoryLimit(n)),
            _ => Err(format!(
                "invalid limit {raw:?}: expected an integer from 1 to {HISTORY_MAX_LIMIT}"
            )),
        }
    }
}

impl utoipa::PartialSchema for HistoryLimit {
    fn schema() -> RefOr<Schema> {
        integer(1, HISTORY_MAX_LIMIT as u64, Some(HISTORY_DEFAULT_LIMIT as u64))
    }
}

/// The node limit of the drawable graph views (`/api/v1/graph`,
/// `/api/v1/graph/topology`), whose bounds depend on the form answered: in
/// JSON 1 to [`LayoutLimit::JSON_MAX`] (default [`LayoutLimit::JSON_DEFAULT`]);
/// in the binary form, and for clusters alone, 1 to
/// [`LayoutLimit::BINARY_MAX`] (default [`LayoutLimit::BINARY_DEFAULT`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LayoutLimit(pub Option<usize>);

impl LayoutLimit {
    pub const JSON_DEFAULT: usize = 2000;
    pub const JSON_MAX: usize = 20_000;
    pub const BINARY_DEFAULT: usize = 100_000;
    pub const BINARY_MAX: usize = 250_000;

    /// The limit for a JSON body listing nodes (`large`: false), or for the
    /// binary form and a clusters-only body (`large`: true).
    ///
    /// # Errors
    ///
    /// A 400 when the limit given is above the form's maximum.
    pub fn resolve(self, large: bool) -> Result<usize, ApiError> {
        let (default, max) = if large {
            (Self::BINARY_DEFAULT, Self::BINARY_MAX)
        } else {
            (Self::JSON_DEFAULT, Self::JSON_MAX)
        };
        match self.0 {
            None => Ok(default),
            Some(n) if n <= max => Ok(n),
            Some(n) => Err(ApiError::bad_request(format!(
                "invalid limit \"{n}\": expected an integer from 1 to {max} (up to {} with Accept: application/x-flatbuffers or clusters_only)",
                Self::BINARY_MAX
            ))),
        }
    }
}

impl ParamValue for LayoutLimit {
    fn parse(raw: &str) -> Result<Self, String> {
        match raw.trim().parse::<usize>() {
            Ok(n) if (1..=Self::BINARY_MAX).contains(&n) => Ok(LayoutLimit(Some(n))),
            _ => Err(format!(
                "invalid limit {raw:?}: expected an integer from 1 to {}",
                Self::BINARY_MAX
            )),
        }
    }
}

/// The schema documents the JSON form's bounds; the larger ones of the
/// binary form are in the parameter's description.
impl utoipa::PartialSchema for LayoutLimit {
    fn schema() -> RefOr<Schema> {
        integer(1, Self::JSON_MAX as u64, Some(Self::JSON_DEFAULT as u64))
    }
}

// ---------------------------------------------------------------- flags and filters

/// A boolean flag: `true`/`1`/`yes` or `false`/`0`/`no` in any case; the
/// bare flag (`?wait`) is true, an absent one false.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flag(pub bool);

impl ParamValue for Flag {
    fn parse(raw: &str) -> Result<Self, String> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "" | "true" | "1" | "yes" => Ok(Flag(true)),
            "false" | "0" | "no" => Ok(Flag(false)),
            _ => Err(format!("invalid {NAME} {raw:?}: expected true or false")),
        }
    }
}

impl utoipa::PartialSchema for Flag {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::Boolean)
            .default(Some(json!(false)))
            .into()
    }
}

/// A text filter that must not be blank when given; kept as sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NonBlank(pub String);

impl ParamValue for NonBlank {
    fn parse(raw: &str) -> Result<Self, String> {
        if raw.trim().is_empty() {
            Err(format!("invalid {NAME} \"\": expected a non-empty value"))
        } else {
            Ok(NonBlank(raw.to_owned()))
        }
    }
}

impl utoipa::PartialSchema for NonBlank {
    fn schema() -> RefOr<Schema> {
        crate::wire::input::non_blank()
    }
}

/// A reachability to filter by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReachabilityFilter(pub Reachability);

impl ParamValue for ReachabilityFilter {
    fn parse(raw: &str) -> Result<Self, String> {
        match raw {
            "reachable" => Ok(ReachabilityFilter(Reachability::Reachable)),
            "unreachable" => Ok(ReachabilityFilter(Reachability::Unreachable)),
            "unknown" => Ok(ReachabilityFilter(Reachability::Unknown)),
            other => Err(format!(
                "invalid reachability {other:?}: expected reachable, unreachable or unknown"
            )),
        }
    }
}

impl utoipa::PartialSchema for ReachabilityFilter {
    fn schema() -> RefOr<Schema> {
        one_of(&["reachable", "unreachable", "unknown"])
    }
}

/// A lowest risk score, 0 to 100; 0 when absent.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MinRisk(pub f32);

impl ParamValue for MinRisk {
    fn parse(raw: &str) -> Result<Self, String> {
        raw.parse::<f32>()
            .ok()
            .filter(|v| (0.0..=100.0).contains(v))
            .map(MinRisk)
            .ok_or_else(|| format!("invalid min_risk {raw:?}: expected a number from 0 to 100"))
    }
}

impl utoipa::PartialSchema for MinRisk {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::Number)
            .minimum(Some(0.0))
            .maximum(Some(100.0))
            .default(Some(json!(0)))
            .into()
    }
}

/// Stages of the remediation queue, as the filter names them.
pub const QUEUE_STAGES: [&str; 7] = [
    "flagged", "analyzed", "codegen", "sau_gate", "pending", "applied", "rejected",
];

/// One part of the remediation queue: a pipeline stage, or the rejected items.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StageFilter {
    Stage(svc_engine::graph::Phase),
    Rejected,
}

impl ParamValue for StageFilter {
    fn parse(raw: &str) -> Result<Self, String> {
        if raw == "rejected" {
            return Ok(StageFilter::Rejected);
        }
        stage_named(raw)
            .map(StageFilter::Stage)
            .ok_or_else(|| format!("unknown stage {raw:?}: expected one of {}", QUEUE_STAGES.join(", ")))
    }
}

impl utoipa::PartialSchema for StageFilter {
    fn schema() -> RefOr<Schema> {
        one_of(&QUEUE_STAGES)
    }
}

/// The history `status` filter, upper-cased.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status(pub String);

/// The status values the history `status` filter accepts.
pub const STATUSES: [&str; 4] = ["OK", "APPROVED", "REJECTED", "QUARANTINED"];

impl ParamValue for Status {
    fn parse(raw: &str) -> Result<Self, String> {
        let upper = raw.to_ascii_uppercase();
        if STATUSES.contains(&upper.as_str()) {
            Ok(Status(upper))
        } else {
            Err(format!(
                "invalid status {raw:?}: expected one of {}",
                STATUSES.join(", ")
            ))
        }
    }
}

impl utoipa::PartialSchema for Status {
    fn schema() -> RefOr<Schema> {
        one_of(&STATUSES)
    }
}

/// Query value types are described inline, where a parameter uses them.
macro_rules! to_schema {
    ($($ty:ty),* $(,)?) => {$(
        impl utoipa::ToSchema for $ty {}
    )*};
}
pub(crate) use to_schema;

to_schema!(
    HistoryLimit,
    LayoutLimit,
    Flag,
    NonBlank,
    ReachabilityFilter,
    MinRisk,
    StageFilter,
    Status
);

deserialize_via_parse!(
    HistoryLimit,
    LayoutLimit,
    Flag,
    NonBlank,
    ReachabilityFilter,
    MinRisk,
    StageFilter,
    Status,
);

#[cfg(test)]
mod tests {
    use super::*;

    fn query<T: DeserializeOwned>(q: &str) -> Result<T, String> {
        let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(q.as_bytes()));
        serde_path_to_error::deserialize(de).map_err(|e| rejection(e).message)
    }

    #[derive(Deserialize, Debug)]
    struct Q {
        #[serde(default)]
        limit: Limit<100, 1000>,
        #[serde(default)]
        include_deleted: Flag,
        ts: Option<Time>,
    }

    #[test]
    fn values_parse_or_say_why_not() {
        let q: Q = query("limit=%201000&include_deleted").unwrap();
        assert_eq!((q.limit, q.include_deleted, q.ts), (Limit(1000), Flag(true), None));
        let q: Q = query("").unwrap();
        assert_eq!((q.limit, q.include_deleted), (Limit(100), Flag(false)));
        for (bad, message) in [
            ("limit=0", "invalid limit \"0\": expected an integer from 1 to 1000"),
            ("limit=", "invalid limit \"\": expected an integer from 1 to 1000"),
            ("limit=1.5", "invalid limit \"1.5\": expected an integer from 1 to 1000"),
            (
                "include_deleted=maybe",
                "invalid include_deleted \"maybe\": expected true or false",
            ),
            ("ts=", "missing ts: expected an RFC 3339 time"),
            ("ts=yesterday", "invalid ts \"yesterday\": expected an RFC 3339 time"),
            (
                "limit=1&limit=2",
                "invalid query: Failed to deserialize query string: duplicate field `limit`",
            ),
        ] {
            assert_eq!(query::<Q>(bad).err().as_deref(), Some(message), "{bad}");
        }
    }

    #[test]
    fn a_value_cannot_forge_the_marker() {
        let e = query::<Q>("limit=%00x").err();
        assert_eq!(
            e.as_deref(),
            Some("invalid limit \"\\0x\": expected an integer from 1 to 1000")
        );
    }

    #[test]
    fn history_limits() {
        assert_eq!(HistoryLimit::parse(""), Ok(HistoryLimit(HISTORY_DEFAULT_LIMIT)));
        assert_eq!(HistoryLimit::parse("500"), Ok(HistoryLimit(500)));
        for bad in ["0", "-1", "501", "ten", "1.5", " 1"] {
            assert!(HistoryLimit::parse(bad).is_err_and(|m| m.contains("1 to 500")), "{bad}");
        }
    }

    #[test]
    fn flags_and_filters() {
        assert_eq!(Flag::parse("TRUE"), Ok(Flag(true)));
        assert_eq!(Flag::parse("0"), Ok(Flag(false)));
        assert!(Flag::parse("maybe").is_err());
        assert_eq!(Status::parse("approved"), Ok(Status("APPROVED".into())));
        assert!(Status::parse("DONE").is_err());
        assert_eq!(StageFilter::parse("rejected"), Ok(StageFilter::Rejected));
        assert!(StageFilter::parse("nope").is_err());
        assert!(MinRisk::parse("101").is_err());
        assert!(NonBlank::parse(" ").is_err());
    }
}

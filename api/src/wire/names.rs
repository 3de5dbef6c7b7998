//! Strings with a known set of values (a stage, a relation, an evaluation
//! mode, ..), each a type of its own so the OpenAPI document lists the
//! values, and the CRN string.
//!
//! A value is written as its text; where it comes from an engine enum, the
//! engine's `name()` or `label()` is that text. The lists here are what the
//! document promises; the contract test checks live responses against them.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Declares a string type whose values the OpenAPI document lists; the
/// type's doc comment is the schema's description.
macro_rules! listed_str {
    ($(#[doc = $doc:literal])* $name:ident [$($value:literal),* $(,)?]) => {
        $(#[doc = $doc])*
        #[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub std::borrow::Cow<'static, str>);

        impl $name {
            /// The values the document lists.
            pub const VALUES: &'static [&'static str] = &[$($value),*];
        }

        impl From<&'static str> for $name {
            fn from(s: &'static str) -> Self {
                $name(std::borrow::Cow::Borrowed(s))
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                $name(std::borrow::Cow::Owned(s))
            }
        }

        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
                let doc: &[&str] = &[$($doc),*];
                let description = doc.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ");
                utoipa::openapi::schema::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::Type::String)
                    .description((!description.is_empty()).then_some(description))
                    .enum_values(Some(Self::VALUES.iter().copied()))
                    .into()
            }
        }

        impl utoipa::ToSchema for $name {}
    };
}
pub(crate) use listed_str;

/// A JSON object with any members.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct JsonObject(pub serde_json::Value);

impl utoipa::PartialSchema for JsonObject {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::Object)
            .additional_properties(Some(utoipa::openapi::schema::AdditionalProperties::<
                utoipa::openapi::Schema,
            >::FreeForm(true)))
            .into()
    }
}

impl ToSchema for JsonObject {}

/// Resource name, graph form:
/// `crn:svc:<provider>:<region>:<service>:<kind>:<account>:<physical_id>`.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(transparent)]
pub struct Crn(pub String);

impl From<String> for Crn {
    fn from(s: String) -> Self {
        Crn(s)
    }
}

listed_str! {
    /// Edge relationship.
    Relation ["AttachedTo", "SecuredBy", "Contains", "Runs", "FlowsTo", "Grants", "Uses"]
}

impl From<svc_engine::relation::Relation> for Relation {
    fn from(r: svc_engine::relation::Relation) -> Self {
        Relation(Cow::Borrowed(r.name()))
    }
}

listed_str! {
    Reachability ["reachable", "unreachable", "unknown"]
}

impl From<svc_engine::graph::Reachability> for Reachability {
    fn from(r: svc_engine::graph::Reachability) -> Self {
        Reachability(Cow::Borrowed(r.name()))
    }
}

listed_str! {
    /// Remediation pipeline phase; empty when the node is in none.
    Phase ["", "flagged", "analyzed", "codegen", "sau_gate", "pending", "applied"]
}

impl From<svc_engine::graph::Phase> for Phase {
    fn from(p: svc_engine::graph::Phase) -> Self {
        Phase(Cow::Borrowed(p.name()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_names_are_listed() {
        for r in svc_engine::relation::Relation::ALL {
            assert!(Relation::VALUES.contains(&r.name()), "{}", r.name());
        }
        use svc_engine::graph::{Phase as P, Reachability as R};
        for r in [R::Reachable, R::Unreachable, R::Unknown] {
            assert!(Reachability::VALUES.contains(&r.name()), "{}", r.name());
        }
        for p in (0..=6).map(P::from_u8) {
            assert!(Phase::VALUES.contains(&p.name()), "{}", p.name());
        }
    }
}

//! Request bodies of the remediation routes. Fields are declared in the
//! order a refused body's message lists them.

use serde::Deserialize;
use utoipa::ToSchema;

use crate::wire::listed_str;

listed_str! {
    QuarantineAction ["ISOLATE", "STOP", "DELETE"]
}

listed_str! {
    BulkAction ["approve", "reject"]
}

listed_str! {
    /// A pipeline stage an item can be moved to.
    Stage ["flagged", "analyzed", "codegen", "sau_gate", "pending", "applied"]
}

/// `approve` and `reject`: a decision on the frozen plan the operator saw.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = RemediationDecision)]
pub struct Decision {
    #[schema(value_type = crate::wire::input::CrnInput)]
    pub crn: String,
    /// The plan hash the operator saw; a plan that changed since is a 409.
    pub plan_hash: String,
    #[serde(default)]
    #[schema(value_type = Option<crate::wire::input::ReasonInput>, nullable = false, inline)]
    pub reason: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<crate::wire::input::ActorInput>, nullable = false, inline)]
    pub actor: Option<String>,
}

/// `override`: a decision like [`Decision`] whose reason must be given
/// (break-glass past `sau_gate`).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = RemediationOverrideDecision)]
pub struct OverrideDecision {
    #[schema(value_type = crate::wire::input::CrnInput)]
    pub crn: String,
    /// The plan hash the operator saw; a plan that changed since is a 409.
    pub plan_hash: String,
    // Why the gate is passed: 422 when absent or blank.
    #[serde(default)]
    #[schema(value_type = crate::wire::input::RequiredReasonInput, inline, required = true)]
    pub reason: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<crate::wire::input::ActorInput>, nullable = false, inline)]
    pub actor: Option<String>,
}

/// `move`: a stage move of one item.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = RemediationMove)]
pub struct MoveBody {
    #[schema(value_type = crate::wire::input::CrnInput)]
    pub crn: String,
    pub plan_hash: String,
    #[schema(value_type = Stage)]
    pub to: String,
    #[serde(default)]
    #[schema(value_type = Option<crate::wire::input::ReasonInput>, nullable = false, inline)]
    pub reason: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<crate::wire::input::ActorInput>, nullable = false, inline)]
    pub actor: Option<String>,
}

/// One item of a bulk request.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkItem {
    #[schema(value_type = crate::wire::input::CrnInput)]
    pub crn: String,
    pub plan_hash: String,
}

/// `bulk`: approve or reject many.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = RemediationBulk)]
pub struct BulkBody {
    #[schema(value_type = BulkAction)]
    pub action: String,
    #[schema(min_items = 1, max_items = 1000)]
    pub items: Vec<BulkItem>,
    #[serde(default)]
    #[schema(value_type = Option<crate::wire::input::ReasonInput>, nullable = false, inline)]
    pub reason: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<crate::wire::input::ActorInput>, nullable = false, inline)]
    pub actor: Option<String>,
}

/// `quarantine`: strip a resource's network access and IAM.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QuarantineRequest {
    #[schema(value_type = crate::wire::input::CrnInput)]
    pub crn: String,
    #[schema(value_type = QuarantineAction)]
    pub action: String,
    #[schema(value_type = crate::wire::input::ReasonInput, inline)]
    pub reason: String,
    #[serde(default)]
    #[schema(value_type = Option<crate::wire::input::ActorInput>, nullable = false, inline)]
    pub actor: Option<String>,
}

/// `revert`: undo a quarantine or a committed step by its payload hash.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RevertRequest {
    #[schema(value_type = crate::wire::input::Sha256Input, inline)]
    pub hash: String,
    #[serde(default)]
    #[schema(value_type = Option<crate::wire::input::ActorInput>, nullable = false, inline)]
    pub actor: Option<String>,
}

/// `POST /api/v1/isolation`: add a resource to the ignore list.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IsolationRequest {
    #[schema(value_type = crate::wire::input::CrnInput)]
    pub crn: String,
    #[schema(value_type = crate::wire::input::RequiredReasonInput, inline)]
    pub reason_code: String,
    /// 0 is permanent.
    pub ttl_seconds: u64,
    #[serde(default)]
    #[schema(value_type = Option<crate::wire::input::ActorInput>, nullable = false, inline)]
    pub actor: Option<String>,
}

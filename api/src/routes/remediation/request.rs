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

/// `approve`, `reject` and `override`: a decision on the frozen plan the operator saw.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = RemediationDecision)]
pub struct Decision {
    pub crn: String,
    /// The plan hash the operator saw; a plan that changed since is a 409.
    pub plan_hash: String,
    #[serde(default)]
    #[schema(nullable = false)]
    pub reason: Option<String>,
    /// Who decides (recorded in the ledger); `api` when absent.
    #[serde(default)]
    #[schema(nullable = false)]
    pub actor: Option<String>,
}

/// `move`: a stage move of one item.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = RemediationMove)]
pub struct MoveBody {
    pub crn: String,
    pub plan_hash: String,
    #[schema(value_type = Stage)]
    pub to: String,
    #[serde(default)]
    #[schema(nullable = false)]
    pub reason: Option<String>,
    #[serde(default)]
    #[schema(nullable = false)]
    pub actor: Option<String>,
}

/// One item of a bulk request.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkItem {
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
    pub items: Vec<BulkItem>,
    #[serde(default)]
    #[schema(nullable = false)]
    pub reason: Option<String>,
    #[serde(default)]
    #[schema(nullable = false)]
    pub actor: Option<String>,
}

/// `quarantine`: strip a resource's network access and IAM.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QuarantineRequest {
    pub crn: String,
    #[schema(value_type = QuarantineAction)]
    pub action: String,
    pub reason: String,
    #[serde(default)]
    #[schema(nullable = false)]
    pub actor: Option<String>,
}

/// `revert`: undo a quarantine or a committed step by its payload hash.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RevertRequest {
    pub hash: String,
    #[serde(default)]
    #[schema(nullable = false)]
    pub actor: Option<String>,
}

/// `POST /api/v1/isolation`: add a resource to the ignore list.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IsolationRequest {
    pub crn: String,
    pub reason_code: String,
    /// 0 is permanent.
    pub ttl_seconds: u64,
    #[serde(default)]
    #[schema(nullable = false)]
    pub actor: Option<String>,
}

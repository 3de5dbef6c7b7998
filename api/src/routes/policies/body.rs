//! Request and response bodies of the policy routes. Response fields are
//! declared in the order they are written (by name); request fields in the
//! order a refused body's message lists them.

use serde::{Deserialize, Serialize};
use svc_engine::policy::Rule;
use svc_engine::policy::book::RuleState;
use utoipa::ToSchema;

use crate::routes::rfc3339;
use crate::wire::listed_str;

listed_str! {
    /// What a match does: `block` keeps it out of remediation at `sau_gate`, `flag` marks it as
    /// waste, `warn` only counts.
    PolicyAction ["block", "flag", "warn"]
}

listed_str! {
    /// `enforcing` acts on matches; `shadow` only counts and records them.
    PolicyMode ["enforcing", "shadow"]
}

listed_str! {
    /// Whether a condition runs as a column predicate or on the CEL interpreter.
    Evaluation ["fast", "interpreter"]
}

impl Evaluation {
    pub fn of(fast: bool) -> Evaluation {
        Evaluation::from(if fast { "fast" } else { "interpreter" })
    }
}

/// One rule to add.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = PolicyRuleInput)]
pub struct RuleBody {
    // 1 to 128 letters, digits, '.', '_', '-' or ':' (the schema says so).
    #[schema(value_type = crate::wire::input::RuleIdInput, inline)]
    pub id: String,
    // A CEL expression over the bindings listed in the README (crn, type, kind, service,
    // provider, region, account, state, cost, tags, props, age_days, is_waste, risk_score,
    // reachability, out, incoming); the schema describes its bounds.
    #[schema(value_type = crate::wire::input::ConditionInput, inline)]
    pub condition: String,
    #[schema(value_type = PolicyAction)]
    pub action: String,
    /// Reported on a match; at most 1024 bytes.
    #[serde(default)]
    #[schema(max_length = 1024)]
    pub message: String,
    /// `enforcing` unless given.
    #[serde(default)]
    #[schema(value_type = Option<PolicyMode>, nullable = false)]
    pub mode: Option<String>,
}

/// `POST /api/v1/policies`: rules to add, all or none.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = PolicyAddRequest)]
pub struct AddBody {
    /// At least one rule; the book holds at most 1000.
    #[schema(min_items = 1, max_items = 1000)]
    pub rules: Vec<RuleBody>,
}

/// `POST /api/v1/policies/toggle`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = PolicyToggleRequest)]
pub struct ToggleBody {
    #[schema(value_type = crate::wire::input::RuleRefInput, inline)]
    pub rule_id: String,
}

/// `POST /api/v1/policies/reorder`: the named rules first, in that order.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = PolicyReorderRequest)]
pub struct ReorderBody {
    /// Rule ids, each once.
    #[schema(schema_with = crate::wire::input::rule_order)]
    pub order: Vec<String>,
}

/// `POST /api/v1/policies/dry-run`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = PolicyDryRunRequest)]
pub struct DryRunBody {
    #[schema(value_type = crate::wire::input::ConditionInput, inline)]
    pub condition: String,
    /// Most CRNs returned (default 1000); `count` is always exact.
    #[serde(default)]
    #[schema(nullable = false, minimum = 1, maximum = 100_000)]
    pub limit: Option<usize>,
}

/// A policy rule as stored.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyRule {
    pub action: PolicyAction,
    pub condition: String,
    #[schema(format = DateTime)]
    pub created_at: String,
    pub evaluation: Evaluation,
    pub id: String,
    pub message: String,
    pub mode: PolicyMode,
    /// `api`, or `pack:<name>` for a rule from an installed policy pack.
    pub origin: String,
    /// Position in evaluation order, 0 first.
    pub priority: usize,
}

impl PolicyRule {
    pub fn new(r: &Rule, priority: usize) -> PolicyRule {
        PolicyRule {
            action: PolicyAction::from(r.spec.action.name()),
            condition: r.spec.condition.clone(),
            created_at: rfc3339(r.created_us),
            evaluation: Evaluation::of(r.compiled.is_fast()),
            id: r.spec.id.clone(),
            message: r.spec.message.clone(),
            mode: PolicyMode::from(r.spec.mode.name()),
            origin: r.origin.label(),
            priority,
        }
    }
}

/// Rules that were added.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyAddResponse {
    pub added: usize,
    pub rules: Vec<PolicyRule>,
}

/// Every rule, in priority order.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyList {
    pub count: usize,
    pub rules: Vec<PolicyRule>,
}

/// The rule that was removed.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyRemoved {
    pub removed: PolicyRule,
}

/// A node on which evaluating a condition was an error.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyEvaluationError {
    pub crn: String,
    pub message: String,
}

/// What a condition matches in the live graph.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyDryRun {
    pub condition: String,
    /// Visible nodes the condition matches.
    pub count: u64,
    pub crns: Vec<String>,
    #[schema(minimum = 0)]
    pub duration_ms: f64,
    pub error_samples: Vec<PolicyEvaluationError>,
    /// Nodes on which evaluating the condition was an error (never a match).
    pub errors: u64,
    pub evaluation: Evaluation,
    pub nodes_evaluated: u64,
    pub truncated: bool,
    /// The condition's value, written in CEL (`1u`, `2.0`, `"a"`,
    /// `[1, 2]`, `{"k": true}`, `timestamp("2026-01-01T00:00:00Z")`,
    /// `duration("5400s")`), when it reads no binding of a resource (`now`
    /// aside) and so has one value for the whole pass; null otherwise, or
    /// when evaluating it was an error (`value_error`).
    #[schema(required = true)]
    pub value: Option<String>,
    /// Why the condition has no value, when it reads no binding of a
    /// resource and evaluating it was an error; null otherwise.
    #[schema(required = true)]
    pub value_error: Option<String>,
}

/// What the rule did in the last scan that evaluated it; null before any.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyLastEvaluation {
    #[schema(format = DateTime)]
    pub at: String,
    pub errors: u64,
    /// The first evaluation error, as `<crn>: <message>`.
    #[schema(required = true)]
    pub first_error: Option<String>,
    pub interpreted_nodes: u64,
    pub matches: u64,
    pub mode: PolicyMode,
    /// Up to ten matching resources (after a restart, empty until the next scan).
    pub sample_crns: Vec<String>,
    pub scan_seq: u64,
}

impl From<&RuleState> for PolicyLastEvaluation {
    fn from(s: &RuleState) -> Self {
        PolicyLastEvaluation {
            at: rfc3339(s.at_us),
            errors: s.errors,
            first_error: (!s.first_error.is_empty()).then(|| s.first_error.clone()),
            interpreted_nodes: s.interpreted,
            matches: s.matches,
            mode: PolicyMode::from(s.mode.clone()),
            sample_crns: s.samples.clone(),
            scan_seq: s.scan_seq,
        }
    }
}

/// A rule with what its last evaluation found.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyMeshEntry {
    pub action: PolicyAction,
    pub condition: String,
    #[schema(format = DateTime)]
    pub created_at: String,
    pub enforcement_mode: PolicyMode,
    pub error_count: u64,
    pub evaluation: Evaluation,
    pub id: String,
    /// What the rule did in the last scan that evaluated it; null before any.
    #[schema(required = true)]
    pub last_evaluation: Option<PolicyLastEvaluation>,
    pub message: String,
    pub mode: PolicyMode,
    pub origin: String,
    pub priority: usize,
    pub trigger_count: u64,
}

impl PolicyMeshEntry {
    pub fn new(r: &Rule, priority: usize, last: Option<&RuleState>) -> PolicyMeshEntry {
        let PolicyRule {
            action,
            condition,
            created_at,
            evaluation,
            id,
            message,
            mode,
            origin,
            priority,
        } = PolicyRule::new(r, priority);
        PolicyMeshEntry {
            action,
            condition,
            created_at,
            enforcement_mode: mode.clone(),
            error_count: last.map_or(0, |s| s.errors),
            evaluation,
            id,
            last_evaluation: last.map(PolicyLastEvaluation::from),
            message,
            mode,
            origin,
            priority,
            trigger_count: last.map_or(0, |s| s.matches),
        }
    }
}

/// The last policy pass as a whole.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyMeshPass {
    #[schema(minimum = 0)]
    pub duration_ms: f64,
    pub nodes: u64,
}

/// Every rule with its mode, action and what its last evaluation found.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyMesh {
    pub count: usize,
    pub last_pass: PolicyMeshPass,
    pub policies: Vec<PolicyMeshEntry>,
}

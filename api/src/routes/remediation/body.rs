//! Response bodies of the remediation routes. Fields are declared in the
//! order they are written: by name.

use serde::Serialize;
use svc_engine::remediation::ops::SagaOutcome as EngineSaga;
use svc_engine::remediation::{Compensation, Isolation as EngineIsolation, Item, QueuePart};
use utoipa::ToSchema;

use crate::error::{ApiError, ApiResult};
use crate::wire::listed_str;

listed_str! {
    /// Where an item is: a pipeline stage, or rejected.
    QueueStage ["flagged", "analyzed", "codegen", "sau_gate", "pending", "applied", "rejected"]
}

listed_str! {
    /// Where a saga left its item.
    SagaStage ["pending", "applied"]
}

listed_str! {
    StepStatus ["pending", "started", "SUCCESS", "FAILED", "COMPENSATED", "COMPENSATION_FAILED"]
}

listed_str! {
    /// Who judged the removal: the plugin's CheckReversibility, or the built-in rules.
    ProofSource ["plugin", "builtin"]
}

listed_str! {
    /// A quarantine, or a committed saga step.
    RevertKind ["quarantine", "step"]
}

/// Whether removing a resource can be undone, and who said so.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RemediationProof {
    pub reason: String,
    pub safe: bool,
    pub source: ProofSource,
}

/// A break-glass override past `sau_gate`.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RemediationOverride {
    pub actor: String,
    pub plan_hash: String,
    pub reason: String,
}

/// A resource in the remediation pipeline.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RemediationItem {
    /// The rule's suggested remediate action.
    pub action: String,
    pub blast_radius: u64,
    /// Why the item is held at `sau_gate` (policies, an unsafe proof, an operator hold).
    pub blockers: Vec<String>,
    pub crn: String,
    /// Why the last saga failed (and was compensated).
    #[schema(required = true)]
    pub failure: Option<String>,
    /// Unix seconds.
    pub flagged_at: u64,
    #[schema(required = true)]
    pub held_by: Option<String>,
    #[serde(rename = "override")]
    #[schema(required = true)]
    pub override_by: Option<RemediationOverride>,
    /// SHA-256 of the current plan; empty before `codegen`.
    pub plan_hash: String,
    #[schema(required = true)]
    pub proof: Option<RemediationProof>,
    pub reachability: String,
    pub reason: String,
    #[schema(required = true)]
    pub rejected: Option<String>,
    pub risk_score: f64,
    /// The rule whose finding decided the node's verdict.
    pub rule: String,
    #[schema(required = true)]
    pub saga_id: Option<String>,
    pub savings_usd_mo: f64,
    pub stage: QueueStage,
    /// Unix seconds.
    pub stage_since: u64,
    pub state: String,
    #[serde(rename = "type")]
    pub ty: String,
}

fn us_to_s(us: u64) -> u64 {
    us / 1_000_000
}

fn cents(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

impl From<&Item> for RemediationItem {
    fn from(i: &Item) -> Self {
        RemediationItem {
            action: i.action.to_string(),
            blast_radius: i.blast_radius,
            blockers: i.notes().blockers.clone(),
            crn: i.crn.clone(),
            failure: i.notes().failure.clone(),
            flagged_at: us_to_s(i.flagged_us),
            held_by: i.notes().held_by.clone(),
            override_by: i.notes().override_by.as_ref().map(|o| RemediationOverride {
                actor: o.actor.clone(),
                plan_hash: o.plan_hash.clone(),
                reason: o.reason.clone(),
            }),
            plan_hash: i.plan_hash.clone(),
            proof: i.proof.as_ref().map(|p| RemediationProof {
                reason: p.reason.clone(),
                safe: p.safe,
                source: ProofSource::from(p.source.to_string()),
            }),
            reachability: i.reachability.to_string(),
            reason: i.reason.clone(),
            rejected: i.notes().rejected.clone(),
            risk_score: i.risk_score,
            rule: i.rule.to_string(),
            saga_id: i.notes().saga_id.clone(),
            savings_usd_mo: cents(i.savings_usd_mo),
            stage: QueueStage::from(if i.notes().rejected.is_some() {
                "rejected"
            } else {
                i.stage.name()
            }),
            stage_since: us_to_s(i.stage_us),
            state: i.state.to_string(),
            ty: i.ty.to_string(),
        }
    }
}

/// Declares a struct with one field per part of the queue.
macro_rules! by_stage {
    ($(#[doc = $doc:literal])* $name:ident($ty:ty) $(#[$field:meta])*) => {
        $(#[doc = $doc])*
        #[derive(Default, Serialize, ToSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            $(#[$field])*
            pub analyzed: $ty,
            $(#[$field])*
            pub applied: $ty,
            $(#[$field])*
            pub codegen: $ty,
            $(#[$field])*
            pub flagged: $ty,
            $(#[$field])*
            pub pending: $ty,
            $(#[$field])*
            pub rejected: $ty,
            $(#[$field])*
            pub sau_gate: $ty,
        }

        impl $name {
            /// The field of the part named `name`: 500 for a part this API does not know.
            fn slot(&mut self, name: &str) -> ApiResult<&mut $ty> {
                Ok(match name {
                    "analyzed" => &mut self.analyzed,
                    "applied" => &mut self.applied,
                    "codegen" => &mut self.codegen,
                    "flagged" => &mut self.flagged,
                    "pending" => &mut self.pending,
                    "rejected" => &mut self.rejected,
                    "sau_gate" => &mut self.sau_gate,
                    other => return Err(ApiError::internal(format!("unknown remediation queue part {other:?}"))),
                })
            }
        }
    };
}

by_stage! {
    /// The listed items of each stage.
    RemediationStageMap(Vec<RemediationItem>)
}

by_stage! {
    /// Items in each stage.
    RemediationStageCounts(u64)
}

by_stage! {
    /// Monthly savings of each stage's items, to the cent.
    RemediationStageSavings(f64) #[schema(minimum = 0)]
}

/// `GET /api/v1/remediation/queue`.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RemediationQueue {
    pub counts: RemediationStageCounts,
    #[schema(minimum = 1)]
    pub limit: usize,
    pub savings_usd_mo: RemediationStageSavings,
    pub stages: RemediationStageMap,
}

impl RemediationQueue {
    /// The queue of `parts`, listing the items of the parts `wanted` says.
    pub fn new(parts: Vec<QueuePart>, limit: usize, wanted: impl Fn(&str) -> bool) -> ApiResult<RemediationQueue> {
        let mut q = RemediationQueue {
            counts: Default::default(),
            limit,
            savings_usd_mo: Default::default(),
            stages: Default::default(),
        };
        for part in parts {
            *q.counts.slot(part.name)? = part.count;
            *q.savings_usd_mo.slot(part.name)? = cents(part.savings_usd_mo + 0.0);
            if wanted(part.name) {
                *q.stages.slot(part.name)? = part.oldest.iter().map(RemediationItem::from).collect();
            }
        }
        Ok(q)
    }
}

/// One saga step as run.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SagaStepOutcome {
    pub action: String,
    pub compensating_payload_hash: String,
    pub index: usize,
    pub inverse: String,
    pub status: StepStatus,
}

/// What approving ran.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SagaOutcome {
    pub applied: bool,
    pub crn: String,
    #[schema(required = true)]
    pub failure: Option<String>,
    pub saga_id: String,
    pub stage: SagaStage,
    pub steps: Vec<SagaStepOutcome>,
}

impl From<&EngineSaga> for SagaOutcome {
    fn from(o: &EngineSaga) -> Self {
        SagaOutcome {
            applied: o.applied,
            crn: o.crn.clone(),
            failure: o.failure.clone(),
            saga_id: o.saga_id.clone(),
            stage: SagaStage::from(o.stage.name()),
            steps: o
                .steps
                .iter()
                .enumerate()
                .map(|(i, s)| SagaStepOutcome {
                    action: s.action.clone(),
                    compensating_payload_hash: s.payload_hash.clone(),
                    index: i,
                    inverse: s.inverse.clone(),
                    status: StepStatus::from(s.status.clone()),
                })
                .collect(),
        }
    }
}

/// What one item of a bulk request came to.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum BulkOutcome {
    Saga(SagaOutcome),
    Item(Box<RemediationItem>),
}

/// The result of one item of a bulk request.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkItemResult {
    pub crn: String,
    /// Why it failed; absent when it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub error: Option<String>,
    /// Approved and applied, or rejected.
    pub ok: bool,
    /// The saga outcome (approve) or the item (reject); absent when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub result: Option<BulkOutcome>,
    /// The HTTP status the single request would have had.
    pub status: u16,
}

/// `POST /api/v1/remediation/bulk`: a result per item.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = RemediationBulkResult)]
pub struct BulkResult {
    pub action: String,
    pub failed: usize,
    pub results: Vec<BulkItemResult>,
    pub succeeded: usize,
}

/// One step of a plan.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanStep {
    pub action: &'static str,
    pub cli: String,
    pub index: usize,
    pub inverse: &'static str,
}

/// `GET /api/v1/plan`: the steps, inverses, CLI and Terraform text.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RemediationPlan {
    pub blast_radius: u64,
    pub cli: Vec<String>,
    pub crn: String,
    pub intent: &'static str,
    pub plan_hash: String,
    pub rule: String,
    pub savings_usd_mo: f64,
    pub stage: &'static str,
    pub steps: Vec<PlanStep>,
    /// What `terraform plan` would show for the same change: the resource's
    /// real address when a configured state declares it.
    pub terraform: String,
    /// The resource's Terraform declaration and the code change that goes
    /// with the plan; `null` when no configured state declares it.
    pub iac: Option<PlanIac>,
}

/// A planned resource as Terraform declares it.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanIac {
    /// Its Terraform address: `module.app.aws_ebs_volume.data[2]`.
    pub address: String,
    /// What to change in the code so that the plan leaves no drift.
    pub code_change: crate::routes::iac::CodeChangeBody,
    /// Repository-relative `.tf` file of its block; empty when not found.
    pub file: String,
    /// The block's first line; 0 when not found.
    pub line: u32,
    /// The state that declares it.
    pub state: String,
}

impl RemediationPlan {
    pub fn new(item: &Item, p: svc_engine::remediation::plan::Plan) -> RemediationPlan {
        RemediationPlan {
            blast_radius: item.blast_radius,
            cli: p.steps.iter().map(|s| s.cli.clone()).collect(),
            crn: p.crn,
            intent: p.intent,
            plan_hash: p.hash,
            rule: p.rule,
            savings_usd_mo: cents(item.savings_usd_mo),
            stage: item.stage.name(),
            steps: p
                .steps
                .into_iter()
                .enumerate()
                .map(|(i, s)| PlanStep {
                    action: s.action,
                    cli: s.cli,
                    index: i,
                    inverse: s.inverse,
                })
                .collect(),
            terraform: p.terraform,
            iac: None,
        }
    }

    /// Speaks of the resource as the configured state `e` declares it.
    pub fn declared_by(&mut self, current: &crate::iac::Current, e: &svc_iac::drift::Entry) {
        let block = crate::iac::block_of(current, e).ok().map(|(_, b)| b);
        let change = svc_iac::change::for_intent(&e.declared, self.intent, block.as_ref());
        if svc_iac::change::removes(self.intent) {
            self.terraform = destroy_text(&e.declared);
        }
        self.iac = Some(PlanIac {
            address: e.declared.address.clone(),
            code_change: change.into(),
            file: block.as_ref().map(|b| b.file.clone()).unwrap_or_default(),
            line: block.as_ref().map_or(0, |b| b.line),
            state: crate::iac::source_of(current, e.state),
        });
    }
}

/// `terraform plan`'s text for destroying a declared resource: its address
/// and the scalar attributes of its state.
fn destroy_text(d: &svc_iac::state::Declared) -> String {
    use std::fmt::Write;
    const SHOWN: usize = 40;
    let mut out = format!(
        "  # {} will be destroyed\n  - resource \"{}\" \"{}\" {{\n",
        d.address, d.ty, d.name
    );
    let scalars: Vec<(&String, &serde_json::Value)> = d
        .attributes
        .iter()
        .filter(|(_, v)| v.is_string() || v.is_number() || v.is_boolean())
        .collect();
    let width = scalars.iter().take(SHOWN).map(|(k, _)| k.len()).max().unwrap_or(0);
    for (k, v) in scalars.iter().take(SHOWN) {
        let _ = writeln!(out, "      - {k:<width$} = {v} -> null");
    }
    if scalars.len() > SHOWN {
        let _ = writeln!(out, "        # ({} more attributes)", scalars.len() - SHOWN);
    }
    out.push_str("    }\n\nPlan: 0 to add, 0 to change, 1 to destroy.\n");
    out
}

/// What a quarantine did.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QuarantineResult {
    pub action: String,
    /// Give it to `svc revert` (or `POST /api/v1/remediation/revert`) to undo the quarantine.
    pub compensating_payload_hash: String,
    pub crn: String,
}

/// What a revert undid.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RevertResult {
    /// The action that undid it.
    pub action: String,
    pub compensating_payload_hash: String,
    pub crn: String,
    pub kind: RevertKind,
    /// The action undone.
    pub reverted: String,
}

impl RevertResult {
    pub fn new(p: Compensation, hash: &str) -> RevertResult {
        RevertResult {
            action: p.inverse,
            compensating_payload_hash: hash.trim().to_ascii_lowercase(),
            crn: p.crn,
            kind: RevertKind::from(p.kind),
            reverted: p.applied,
        }
    }
}

/// An ignore-list entry (SPEC 3.5).
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Isolation {
    pub author_identifier: String,
    /// Unix seconds.
    pub created_at: u64,
    pub crn: String,
    /// Unix seconds; null for a permanent entry.
    #[schema(required = true)]
    pub expires_at: Option<u64>,
    pub reason_code: String,
    pub ttl_seconds: u64,
}

impl From<&EngineIsolation> for Isolation {
    fn from(i: &EngineIsolation) -> Self {
        Isolation {
            author_identifier: i.author.clone(),
            created_at: us_to_s(i.created_us),
            crn: i.crn.clone(),
            expires_at: i.expires_us().map(us_to_s),
            reason_code: i.reason_code.clone(),
            ttl_seconds: i.ttl_seconds,
        }
    }
}

/// `GET /api/v1/isolation`: the ignore list.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IsolationList {
    pub count: usize,
    pub entries: Vec<Isolation>,
}

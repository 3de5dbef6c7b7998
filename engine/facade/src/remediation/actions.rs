//! The remediation pipeline's operations on the engine's public handle:
//! each forwards to the [`super::ops::Pipeline`] of the engine's subsystems.

use super::ops::SagaOutcome;
use super::plan::Plan;
use super::{Compensation, Isolation, Item, QueuePart, RemediationError};
use crate::engine::Engine;
use crate::graph::Phase;

impl Engine {
    /// Every item, by CRN.
    pub fn remediation_items(&self) -> Result<Vec<Item>, RemediationError> {
        self.pipeline().remediation_items()
    }

    /// The queue by part: each stage of [`super::STAGES`] in order, then the
    /// rejected items (which keep their stage but leave the queue). Each
    /// part has its count, its savings and its `limit` items longest at
    /// their stage. Only those are copied: at 1M nodes the pipeline holds
    /// ~190k items, and copying all of them for a page of each stage took
    /// ~0.6 s a request and left the daemon ~150 MB larger (docs/perf-log.md,
    /// the remediation queue row).
    pub fn remediation_queue(&self, limit: usize) -> Result<Vec<QueuePart>, RemediationError> {
        self.pipeline().remediation_queue(limit)
    }

    /// Whether the stored remediation items are in place: until they are
    /// ([`Engine::open_deferred`]), whatever reads the pipeline waits.
    pub fn remediation_loaded(&self) -> bool {
        self.remediation.is_loaded()
    }

    /// One item.
    pub fn remediation_item(&self, crn: &str) -> Result<Item, RemediationError> {
        self.pipeline().remediation_item(crn)
    }

    /// The plan of an item (or of any waste resource, computed now).
    pub fn remediation_plan(&self, crn: &str) -> Result<Plan, RemediationError> {
        self.pipeline().remediation_plan(crn)
    }

    /// Rejects an item: it leaves the queue while its plan is unchanged.
    pub fn reject(&self, crn: &str, plan_hash: &str, actor: &str, reason: &str) -> Result<Item, RemediationError> {
        self.pipeline().reject(crn, plan_hash, actor, reason)
    }

    /// An operator move. Legal: `pending -> sau_gate` (hold for review),
    /// `sau_gate -> pending` (release an operator hold; a policy or proof
    /// blocker needs an override), and any stage but `applied` back to
    /// `flagged` (prove and plan again on the next scan).
    pub fn move_item(
        &self,
        crn: &str,
        plan_hash: &str,
        to: Phase,
        actor: &str,
        reason: &str,
    ) -> Result<Item, RemediationError> {
        self.pipeline().move_item(crn, plan_hash, to, actor, reason)
    }

    /// Break-glass: lets one item past `sau_gate` for its current plan.
    pub fn override_gate(
        &self,
        crn: &str,
        plan_hash: &str,
        actor: &str,
        reason: &str,
    ) -> Result<Item, RemediationError> {
        self.pipeline().override_gate(crn, plan_hash, actor, reason)
    }

    /// Approves a pending item and runs its saga.
    pub fn approve(&self, crn: &str, plan_hash: &str, actor: &str) -> Result<SagaOutcome, RemediationError> {
        self.pipeline().approve(crn, plan_hash, actor)
    }

    /// Quarantines a resource (`ISOLATE`, `STOP` or `DELETE`) through its
    /// plugin, keeping the inverse by hash; returns the hash.
    pub fn quarantine(&self, crn: &str, action: &str, reason: &str, actor: &str) -> Result<String, RemediationError> {
        self.pipeline().quarantine(crn, action, reason, actor)
    }

    /// Undoes what the payload stored under `hash` records (a quarantine
    /// or a committed saga step), once.
    pub fn revert(&self, hash: &str, actor: &str) -> Result<Compensation, RemediationError> {
        self.pipeline().revert(hash, actor)
    }

    /// Adds (or replaces) an ignore entry.
    pub fn isolate(
        &self,
        crn: &str,
        reason_code: &str,
        ttl_seconds: u64,
        actor: &str,
    ) -> Result<Isolation, RemediationError> {
        self.pipeline().isolate(crn, reason_code, ttl_seconds, actor)
    }

    /// The ignore list.
    pub fn isolations(&self) -> Vec<Isolation> {
        self.pipeline().isolations()
    }

    /// Removes an ignore entry.
    pub fn remove_isolation(&self, crn: &str, actor: &str) -> Result<Isolation, RemediationError> {
        self.pipeline().remove_isolation(crn, actor)
    }

    /// Removes the ignore entries whose TTL ran out by `now_us`, recording each.
    pub fn expire_isolations(&self, now_us: u64) -> Result<usize, RemediationError> {
        self.pipeline().expire_isolations(now_us)
    }
}

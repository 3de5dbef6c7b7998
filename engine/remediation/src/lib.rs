//! Remediation (DESIGN.md section 6): flagged waste carried through the
//! stages `flagged -> analyzed -> codegen -> sau_gate -> pending ->
//! applied`, operator decisions on frozen plans, sagas that compensate on
//! failure, quarantine with its inverse kept by hash, and the ignore list.
//!
//! - [`plan`]: the steps, inverses, CLI and Terraform text of one plan.
//! - [`store`]: items, compensating payloads, sagas and ignore entries in
//!   `graph.redb`, so all of it survives a restart.
//! - [`state`]: the pipeline's state in memory, with the per-CRN locks.
//!
//! What the engine does with them (the `engine.sau` pass of a scan, the
//! operator actions, sagas, quarantine, revert, isolation) is in the
//! `svc-engine` facade, `remediation::ops`, since it needs the graph, the
//! sources and the ledger together.
//!
//! An item is the pipeline's record of one resource. It enters at
//! `flagged` when a scan marks the resource waste (unless an ignore entry
//! or `svc:ignore` covers it); the `engine.sau` pass proves it
//! (`analyzed`: the source's `CheckReversibility`, else built-in rules, and
//! the blast radius), plans it (`codegen`), holds it at `sau_gate` while an
//! enforcing `block` policy matches or the proof says unsafe (unless an
//! override lets it through), and leaves it `pending` for an operator. A
//! resource that stops being waste leaves the pipeline, recorded as a
//! `PIPELINE_MOVE` to `removed`.

pub mod name;
pub mod plan;
pub mod state;
pub mod store;

pub use name::Name;
pub use state::{Remediation, SharedGuard, SharedLocks};
pub use store::RemediationStore;

use thiserror::Error;

use svc_graph::graph::Phase;

/// Items proved (analyzed) per scan at most; the rest wait at `flagged`
/// for the next scan, oldest first, so a first scan of a large estate does
/// not spend minutes on `CheckReversibility` calls.
pub const ANALYZE_PER_SCAN: usize = 20_000;

/// How long a saga waits for its resource's lock (and for a running scan
/// to release the plugins) before giving up with `LOCK_TIMEOUT`.
pub const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// The proof that acting on a resource is safe, or why it is not.
#[derive(Clone, Debug, PartialEq)]
pub struct Proof {
    pub safe: bool,
    pub reason: String,
    /// `plugin` when the provider's `CheckReversibility` answered, else `builtin`.
    pub source: Name,
}

/// An operator's break-glass override of `sau_gate`.
#[derive(Clone, Debug, PartialEq)]
pub struct Override {
    pub actor: String,
    pub reason: String,
    /// The plan it was given for; a new plan goes through the gate again.
    pub plan_hash: String,
}

/// One resource in the pipeline.
///
/// A large estate's pipeline holds millions of items, most of them flagged
/// and never touched by an operator: what only some items carry (a proof,
/// operator and saga notes) is held behind a pointer, so an item without
/// it pays eight bytes, not the fields.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    pub crn: String,
    pub stage: Phase,
    /// The node type and state the plan was made for.
    pub ty: Name,
    pub state: Name,
    /// The deciding rule and its suggested action.
    pub rule: Name,
    pub action: Name,
    pub reason: String,
    pub savings_usd_mo: f64,
    pub risk_score: f64,
    pub reachability: Name,
    pub blast_radius: u64,
    pub proof: Option<Box<Proof>>,
    /// Empty until `codegen`.
    pub plan_hash: String,
    notes: NoteBox,
    /// When the item entered the pipeline and its current stage (µs).
    pub flagged_us: u64,
    pub stage_us: u64,
}

/// What operators and sagas noted on an item ([`Item::notes`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Notes {
    /// Why the item is held at `sau_gate`.
    pub blockers: Vec<String>,
    /// An operator hold (a move to `sau_gate`), with who held it.
    pub held_by: Option<String>,
    pub override_by: Option<Override>,
    /// The last saga's failure, shown until the next attempt.
    pub failure: Option<String>,
    /// The last saga run for the item.
    pub saga_id: Option<String>,
    /// Rejected by an operator (`actor: reason`): it stays out of the queue
    /// while its plan is unchanged.
    pub rejected: Option<String>,
}

static NO_NOTES: Notes = Notes {
    blockers: Vec::new(),
    held_by: None,
    override_by: None,
    failure: None,
    saga_id: None,
    rejected: None,
};

/// An item's notes, allocated when the first is written. Equal when the
/// notes are, whether or not they were ever allocated.
#[derive(Clone, Debug, Default)]
struct NoteBox(Option<Box<Notes>>);

impl PartialEq for NoteBox {
    fn eq(&self, other: &NoteBox) -> bool {
        self.get() == other.get()
    }
}

impl NoteBox {
    /// Allocated only when some note is set.
    fn of(notes: Notes) -> NoteBox {
        NoteBox((notes != NO_NOTES).then(|| Box::new(notes)))
    }

    fn get(&self) -> &Notes {
        self.0.as_deref().unwrap_or(&NO_NOTES)
    }
}

impl Item {
    pub fn new(crn: String, now_us: u64) -> Item {
        Item {
            crn,
            stage: Phase::Flagged,
            ty: Name::default(),
            state: Name::default(),
            rule: Name::default(),
            action: Name::default(),
            reason: String::new(),
            savings_usd_mo: 0.0,
            risk_score: 0.0,
            reachability: Name::default(),
            blast_radius: 0,
            proof: None,
            plan_hash: String::new(),
            notes: NoteBox::default(),
            flagged_us: now_us,
            stage_us: now_us,
        }
    }

    /// Its operator and saga notes (all empty on most items).
    pub fn notes(&self) -> &Notes {
        self.notes.get()
    }

    /// Its notes, to change.
    pub fn notes_mut(&mut self) -> &mut Notes {
        self.notes.0.get_or_insert_default()
    }

    pub fn set_stage(&mut self, stage: Phase, now_us: u64) {
        if self.stage != stage {
            self.stage = stage;
            self.stage_us = now_us;
        }
    }
}

/// An ignore-list entry (SPEC 3.5): the resource never enters the
/// pipeline while it holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Isolation {
    pub crn: String,
    pub author: String,
    pub reason_code: String,
    /// 0: permanent.
    pub ttl_seconds: u64,
    pub created_us: u64,
}

impl Isolation {
    /// When the entry expires (µs), `None` when permanent.
    pub fn expires_us(&self) -> Option<u64> {
        (self.ttl_seconds > 0).then(|| {
            self.created_us
                .saturating_add(self.ttl_seconds.saturating_mul(1_000_000))
        })
    }
}

/// A compensating payload, stored by the SHA-256 of its canonical bytes:
/// what undoes one committed step or quarantine.
#[derive(Clone, Debug, PartialEq)]
pub struct Compensation {
    pub crn: String,
    /// `step` (a saga step) or `quarantine`.
    pub kind: String,
    /// The action that was applied, and the one that undoes it.
    pub applied: String,
    pub inverse: String,
    /// What the provider returned when applying (a snapshot id, the
    /// previous state), passed to the inverse.
    pub properties: std::collections::BTreeMap<String, String>,
    pub saga_id: String,
    pub created_us: u64,
    /// Set once reverted (µs), so a payload is undone once.
    pub reverted_us: u64,
}

/// One step of a saga as recorded.
#[derive(Clone, Debug, PartialEq)]
pub struct SagaStep {
    pub action: String,
    pub inverse: String,
    /// `pending`, `started`, `SUCCESS`, `FAILED`, `COMPENSATED`.
    pub status: String,
    pub payload_hash: String,
}

/// A saga as recorded before and after each step, so a daemon stopped
/// mid-saga finds it on restart and compensates what it did.
#[derive(Clone, Debug, PartialEq)]
pub struct Saga {
    pub id: String,
    pub crn: String,
    pub plan_hash: String,
    pub intent: String,
    pub blast_radius: u64,
    pub steps: Vec<SagaStep>,
    /// `running`, `applied`, `compensated`.
    pub status: String,
    pub started_us: u64,
}

/// Why an operator action or a saga was refused.
#[derive(Debug, Error)]
pub enum RemediationError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    LockTimeout(String),
    /// A cluster's lock on the resource was lost mid-saga: this node
    /// stopped, and the node leading next resumes the saga.
    #[error("{0}")]
    LockLost(String),
    #[error(transparent)]
    Store(#[from] svc_store::StoreError),
    #[error(transparent)]
    Ledger(#[from] svc_store::ledger::LedgerError),
}

/// Stage names as the API shows them.
pub const STAGES: [Phase; 6] = [
    Phase::Flagged,
    Phase::Analyzed,
    Phase::Codegen,
    Phase::SauGate,
    Phase::Pending,
    Phase::Applied,
];

/// One part of the remediation queue (the engine's `remediation_queue`): the
/// items at one stage, or the rejected ones.
#[derive(Clone, Debug, PartialEq)]
pub struct QueuePart {
    /// The stage's name, or `rejected`.
    pub name: &'static str,
    pub count: u64,
    /// The items' savings, summed.
    pub savings_usd_mo: f64,
    /// The items longest at the stage (then by CRN), as many as asked for.
    pub oldest: Vec<Item>,
}

/// A stage by its name.
pub fn stage_named(name: &str) -> Option<Phase> {
    STAGES.into_iter().find(|p| p.name() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_keeps_what_few_items_carry_behind_pointers() {
        // Millions of items are held at 10M resources: the notes and the
        // proof are one pointer each until set.
        assert!(size_of::<Item>() <= 232, "{} bytes", size_of::<Item>());
        let mut i = Item::new("crn:x".into(), 1);
        let bare = i.clone();
        i.notes_mut().held_by = None;
        assert_eq!(i, bare, "allocated notes that hold nothing equal none");
        i.notes_mut().failure = Some("no".into());
        assert_ne!(i, bare);
        assert_eq!(NoteBox::of(Notes::default()).0, None);
    }
}

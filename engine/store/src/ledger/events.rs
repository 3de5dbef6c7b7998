//! The ledger's events: one to append ([`NewEvent`]), one stored
//! ([`Event`]), and every kind of event, declared once: its type string
//! (SPEC 6.1), its history status (DESIGN.md section 2), whether the history
//! filter `s.a.u_ACTION` matches it, and the type of its payload.
//!
//! To add an event type, add one line to the table in [`event_kinds!`]'s
//! invocation below and its payload struct; the type string, the status
//! mapping, the `s.a.u_ACTION` set and the payload are then checked
//! against each other by the compiler. Producers build events with
//! [`NewEvent::of`], which takes the payload's type to name the kind.
//!
//! Payloads are serialized to a JSON value, then stored as that value's
//! text (keys in sorted order), exactly as the ledger always stored them.
//! The type string of a stored event stays a string: events written by an
//! older daemon keep verifying whatever their type.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

/// An event to append; the ledger adds seq, time, session and hashes.
#[derive(Clone, Debug)]
pub struct NewEvent {
    pub event_type: String,
    pub crn: Option<String>,
    pub actor: String,
    pub message: String,
    pub payload: serde_json::Value,
}

/// One stored ledger event.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub seq: u64,
    pub ts_us: u64,
    pub event_type: String,
    /// Empty when the event concerns no resource.
    pub crn: String,
    pub actor: String,
    pub message: String,
    pub session_id: String,
    pub payload: serde_json::Value,
    pub prev_hash: [u8; 32],
    pub hash: [u8; 32],
}

/// The type of the stand-in a reader gets for a stored event that does not
/// decode ([`Event::unreadable`]); never stored.
pub const UNREADABLE: &str = "UNREADABLE";

impl Event {
    /// The stand-in for stored event `seq` whose bytes do not decode: type
    /// [`UNREADABLE`], the reason in its message, empty otherwise. Readers
    /// get it in place of the event, so damage shows where it is.
    pub fn unreadable(seq: u64, reason: &str) -> Event {
        Event {
            seq,
            ts_us: 0,
            event_type: UNREADABLE.to_owned(),
            crn: String::new(),
            actor: String::new(),
            message: format!(
                "event {seq} cannot be read ({reason}); the ledger is damaged here: run svc ledger verify"
            ),
            session_id: String::new(),
            payload: serde_json::Value::Object(serde_json::Map::new()),
            prev_hash: [0; 32],
            hash: [0; 32],
        }
    }

    pub fn status(&self) -> &'static str {
        status_of(&self.event_type)
    }
    pub fn hash_hex(&self) -> String {
        hex::encode(self.hash)
    }
}

/// A ledger event's payload, tied to its kind.
pub trait Payload: Serialize {
    const KIND: EventKind;
}

macro_rules! event_kinds {
    ($($(#[$doc:meta])* $variant:ident = $name:literal, status $status:literal, sau $sau:literal, payload $payload:ty;)*) => {
        /// The kinds of ledger event.
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum EventKind {
            $($(#[$doc])* $variant,)*
        }

        impl EventKind {
            /// Every kind, in declaration order.
            pub const ALL: &'static [EventKind] = &[$(EventKind::$variant,)*];

            /// The type string stored and shown (`event_type`, history `type`).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(EventKind::$variant => $name,)*
                }
            }

            /// The history status: APPROVED, REJECTED, QUARANTINED or OK.
            pub const fn status(self) -> &'static str {
                match self {
                    $(EventKind::$variant => $status,)*
                }
            }

            /// Whether the history filter `s.a.u_ACTION` matches this kind.
            pub const fn is_sau_action(self) -> bool {
                match self {
                    $(EventKind::$variant => $sau,)*
                }
            }

            /// The kind a type string names, if any.
            pub fn parse(s: &str) -> Option<EventKind> {
                match s {
                    $($name => Some(EventKind::$variant),)*
                    _ => None,
                }
            }
        }

        $(impl Payload for $payload {
            const KIND: EventKind = EventKind::$variant;
        })*
    };
}

event_kinds! {
    /// A full scan cycle finished.
    ScanCompleted = "SCAN_COMPLETED", status "OK", sau false, payload ScanCompleted;
    /// A resource was added to, removed from or expired off the ignore list.
    Isolation = "ISOLATION", status "OK", sau false, payload Isolation;
    /// A resource's network access and IAM were stripped.
    Quarantine = "QUARANTINE", status "QUARANTINED", sau true, payload Quarantine;
    /// A quarantine was undone.
    QuarantineReverted = "QUARANTINE_REVERTED", status "OK", sau true, payload QuarantineReverted;
    /// An operator approved a remediation.
    Approval = "APPROVAL", status "APPROVED", sau true, payload Approval;
    /// An operator rejected a remediation.
    Rejection = "REJECTION", status "REJECTED", sau true, payload Rejection;
    /// A saga step ran.
    ExecutionCommit = "EXECUTION_COMMIT", status "OK", sau true, payload ExecutionCommit;
    /// A saga step was reversed, after a failure or by a revert.
    ExecutionRollback = "EXECUTION_ROLLBACK", status "OK", sau true, payload ExecutionRollback;
    /// A policy rule was added, removed, toggled or reordered.
    PolicyChange = "POLICY_CHANGE", status "OK", sau false, payload PolicyChange;
    /// A break-glass override let an item past `sau_gate`.
    SauOverride = "s.a.u_OVERRIDE", status "OK", sau true, payload SauOverride;
    /// A resource's lock was not taken in time.
    LockTimeout = "LOCK_TIMEOUT", status "OK", sau false, payload LockTimeout;
    /// An item moved between pipeline stages or left the pipeline.
    PipelineMove = "PIPELINE_MOVE", status "OK", sau false, payload PipelineMove;
    /// Old events were pruned from the ledger.
    HistoryPruned = "HISTORY_PRUNED", status "OK", sau false, payload HistoryPruned;
    /// Scans committed to the graph store whose SCAN_COMPLETED was never
    /// appended (the daemon stopped, or the ledger could not be written, in
    /// between), recorded when found.
    ScanRecovered = "SCAN_RECOVERED", status "OK", sau false, payload ScanRecovered;
    /// An API token was created.
    TokenCreated = "TOKEN_CREATED", status "OK", sau false, payload TokenCreated;
    /// An API token was revoked.
    TokenRevoked = "TOKEN_REVOKED", status "OK", sau false, payload TokenRevoked;
    /// A plugin or policy pack was installed from the registry.
    RegistryInstall = "REGISTRY_INSTALL", status "OK", sau false, payload RegistryInstall;
    /// A plugin or policy pack was uninstalled.
    RegistryRemove = "REGISTRY_REMOVE", status "OK", sau false, payload RegistryRemove;
}

/// The history type filter that stands for every kind whose
/// [`EventKind::is_sau_action`] holds.
pub const SAU_ACTION: &str = "s.a.u_ACTION";
/// Type of the event [`Ledger::prune`](super::Ledger::prune) appends to audit itself.
pub const HISTORY_PRUNED: &str = EventKind::HistoryPruned.as_str();

/// History status of an event type ([`EventKind::status`]); OK for a type
/// no kind names.
pub fn status_of(event_type: &str) -> &'static str {
    EventKind::parse(event_type).map_or("OK", EventKind::status)
}

/// Every type the history filter `s.a.u_ACTION` matches.
pub fn sau_action_types() -> impl Iterator<Item = &'static str> {
    EventKind::ALL.iter().filter(|k| k.is_sau_action()).map(|k| k.as_str())
}

/// The kinds that record a scan's `scan_seq` in their payload.
pub const SCAN_RECORDS: [EventKind; 2] = [EventKind::ScanCompleted, EventKind::ScanRecovered];

impl NewEvent {
    /// An event of the kind `payload`'s type names.
    pub fn of<P: Payload>(crn: Option<&str>, actor: &str, message: String, payload: &P) -> NewEvent {
        NewEvent {
            event_type: P::KIND.as_str().to_owned(),
            crn: crn.map(str::to_owned),
            actor: actor.to_owned(),
            message,
            // Plain structs of strings, numbers and JSON values: their
            // serialization cannot fail.
            payload: serde_json::to_value(payload).unwrap_or(Value::Null),
        }
    }
}

/// `SCAN_COMPLETED`: what the scan found and did, phase by phase.
#[derive(Clone, Debug, Serialize)]
pub struct ScanCompleted {
    pub scan_seq: u64,
    pub generation: u64,
    pub duration_ms: u64,
    pub node_count: u64,
    pub edge_count: u64,
    pub waste_count: u64,
    pub logically_deleted: u64,
    pub cost_usd_mo: f64,
    pub waste_usd_mo: f64,
    pub projected_savings_usd_mo: f64,
    pub savings_usd: f64,
    pub nodes_added: u64,
    pub nodes_changed: u64,
    pub nodes_unchanged: u64,
    pub nodes_deleted: u64,
    pub edges_added: u64,
    pub edges_deleted: u64,
    pub edges_dangling: u64,
    pub versions_written: u64,
    /// Active nodes by provider.
    pub providers: BTreeMap<String, u64>,
    pub sources: Vec<ScanSource>,
    /// Each heuristic plugin's outcome.
    pub heuristics: Vec<Value>,
    /// The built-in rules' pass in numbers.
    pub builtin: Value,
    pub observed_at: u64,
    pub findings: u64,
    pub verdicts_changed: u64,
    pub ghost_linker: LinkerSummary,
    pub assessments_changed: u64,
    pub reachability: ReachabilitySummary,
    /// The pattern phase in numbers.
    pub pattern: Value,
    /// What `engine.sau` did; null when the pass did not run.
    pub remediation: Option<RemediationSummary>,
    /// What the policy rules did.
    pub policy: Value,
    /// Each of the ten phases, in SPEC order, with its wall time.
    pub phases: Vec<PhaseTime>,
    /// Wall time of the durable commit that follows the phases.
    pub commit_ms: u64,
}

/// One phase of a scan in `SCAN_COMPLETED`: its span name and wall time.
#[derive(Clone, Debug, Serialize)]
pub struct PhaseTime {
    pub name: String,
    pub duration_ms: u64,
}

/// One source's scan in `SCAN_COMPLETED`.
#[derive(Clone, Debug, Serialize)]
pub struct ScanSource {
    pub name: String,
    pub providers: Vec<String>,
    pub ok: bool,
    pub error: Option<String>,
    pub nodes: u64,
    pub edges: u64,
    pub duration_ms: u64,
    pub rejected: u64,
    pub rejections: Vec<String>,
    /// The parts of its estate the source could not list while the rest
    /// of its scan succeeded: nothing there was retired.
    pub unlisted: Vec<UnlistedScope>,
}

/// A part of a source's estate its scan could not list; a field not set
/// (null) spans every value.
#[derive(Clone, Debug, Serialize)]
pub struct UnlistedScope {
    pub provider: Option<String>,
    pub account: Option<String>,
    pub region: Option<String>,
    pub service: Option<String>,
    pub error: String,
}

/// The ghost linker's figures in `SCAN_COMPLETED`.
#[derive(Clone, Debug, Serialize)]
pub struct LinkerSummary {
    pub matched: u64,
    pub added: u64,
    pub retired: u64,
    pub expired_flows: u64,
}

/// Nodes by reachability in `SCAN_COMPLETED`.
#[derive(Clone, Debug, Serialize)]
pub struct ReachabilitySummary {
    pub reachable: u64,
    pub unreachable: u64,
    pub unknown: u64,
}

/// The remediation pass's figures in `SCAN_COMPLETED`.
#[derive(Clone, Debug, Serialize)]
pub struct RemediationSummary {
    /// Items per stage after the pass.
    pub stages: BTreeMap<String, u64>,
    pub entered: u64,
    pub left: u64,
    pub left_reasons: BTreeMap<String, u64>,
    pub analyzed: u64,
    pub written: u64,
    pub held: u64,
    pub expired_isolations: u64,
    pub recovered_sagas: u64,
}

/// `ISOLATION` (SPEC 6.1): `action` is `ADDED`, `REMOVED` or `EXPIRED`.
#[derive(Clone, Debug, Serialize)]
pub struct Isolation {
    pub crn: String,
    pub author_identifier: String,
    pub reason_code: String,
    /// 0 means permanent.
    pub ttl_seconds: u64,
    pub action: String,
}

/// `QUARANTINE`.
#[derive(Clone, Debug, Serialize)]
pub struct Quarantine {
    pub crn: String,
    pub action: String,
    pub reason: String,
    pub compensating_payload_hash: String,
    pub actor: String,
}

/// `QUARANTINE_REVERTED`.
#[derive(Clone, Debug, Serialize)]
pub struct QuarantineReverted {
    pub crn: String,
    pub compensating_payload_hash: String,
    /// The inverse action that undid it.
    pub action: String,
    /// The quarantine action undone.
    pub reverted: String,
    pub actor: String,
}

/// `APPROVAL`.
#[derive(Clone, Debug, Serialize)]
pub struct Approval {
    pub crn: String,
    pub plan_hash: String,
    pub intent: String,
    pub savings_usd_mo: f64,
    pub actor: String,
}

/// `REJECTION`.
#[derive(Clone, Debug, Serialize)]
pub struct Rejection {
    pub crn: String,
    pub plan_hash: String,
    pub stage: String,
    pub reason: String,
    pub actor: String,
}

/// `EXECUTION_COMMIT` (SPEC 6.1).
#[derive(Clone, Debug, Serialize)]
pub struct ExecutionCommit {
    pub saga_id: String,
    pub crn: String,
    pub intent: String,
    pub step_index: u64,
    pub blast_radius: u64,
    /// SHA-256 of the stored rollback payload, which `svc revert` fetches.
    pub compensating_payload_hash: String,
    /// `SUCCESS`.
    pub status: String,
    pub duration_ms: u64,
    pub action: String,
    pub provider_status: String,
}

/// `EXECUTION_ROLLBACK` (SPEC 6.1): a step compensated after a later step
/// failed, or a committed step undone by a revert.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum ExecutionRollback {
    Compensated {
        saga_id: String,
        step_index: u64,
        reason: String,
        compensating_action: String,
        /// `COMPENSATED`, or `FAILED` when the inverse failed too.
        status: String,
        crn: String,
        error: Option<String>,
    },
    Reverted {
        saga_id: String,
        /// Null: a revert names the payload, not the step.
        step_index: Option<u64>,
        reason: String,
        compensating_action: String,
        /// `COMPENSATED`.
        status: String,
        crn: String,
        compensating_payload_hash: String,
    },
}

/// `POLICY_CHANGE` (SPEC 6.1): `action` is `ADDED`, `REMOVED`, `TOGGLED`
/// or `REORDERED`; the last carries the new order instead of the rule.
#[derive(Clone, Debug, Serialize)]
pub struct PolicyChange {
    pub rule_id: String,
    pub action: String,
    pub enforcement_mode: String,
    pub author: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule_action: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order: Option<Vec<String>>,
}

/// `s.a.u_OVERRIDE`.
#[derive(Clone, Debug, Serialize)]
pub struct SauOverride {
    pub crn: String,
    pub plan_hash: String,
    pub reason: String,
    /// What held the item at the gate.
    pub blockers: Vec<String>,
    pub actor: String,
}

/// `LOCK_TIMEOUT`.
#[derive(Clone, Debug, Serialize)]
pub struct LockTimeout {
    pub crn: String,
    pub waited_seconds: u64,
    pub reason: String,
}

/// `PIPELINE_MOVE`: an operator's move (with the plan decided on), or an
/// item leaving the pipeline (`to` is `removed`).
#[derive(Clone, Debug, Serialize)]
pub struct PipelineMove {
    pub crn: String,
    pub from: String,
    pub to: String,
    pub reason: String,
    pub actor: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan_hash: Option<String>,
}

/// `HISTORY_PRUNED`: the ledger's record of its own pruning.
#[derive(Clone, Debug, Serialize)]
pub struct HistoryPruned {
    pub pruned: u64,
    pub cutoff_us: u64,
    /// The first event removed; 0 when none was.
    pub first_seq: u64,
    /// The last event removed (by this prune or an earlier one).
    pub through_seq: u64,
    /// That event's hash in hex: the chain's first remaining event links to it.
    pub last_hash: String,
    /// Why, for a prune the daemon made itself (the retention setting);
    /// absent for a prune an operator asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `TOKEN_CREATED`: a named API token and its role (never the token).
#[derive(Clone, Debug, Serialize)]
pub struct TokenCreated {
    pub name: String,
    pub role: String,
}

/// `TOKEN_REVOKED`: a named API token was revoked, ending its sessions.
#[derive(Clone, Debug, Serialize)]
pub struct TokenRevoked {
    pub name: String,
    pub role: String,
    pub sessions_ended: u64,
}

/// `REGISTRY_INSTALL`: a package that passed the registry's checks and
/// was installed.
#[derive(Clone, Debug, Serialize)]
pub struct RegistryInstall {
    pub name: String,
    /// `plugin` or `policy`.
    #[serde(rename = "type")]
    pub kind: String,
    pub version: String,
    pub category: String,
    /// Of the plugin binary, or of the pack's file listing.
    pub sha256: String,
    /// Where it came from: the index or release URL.
    pub source: String,
    pub actor: String,
    /// The version it replaced, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_version: Option<String>,
    /// Whether a plugin was added to `plugins.active`.
    pub activated: bool,
}

/// `REGISTRY_REMOVE`: an installed package was removed.
#[derive(Clone, Debug, Serialize)]
pub struct RegistryRemove {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub version: String,
    pub category: String,
    pub sha256: String,
    pub source: String,
    pub actor: String,
}

/// `SCAN_RECOVERED`: committed scans no SCAN_COMPLETED records.
#[derive(Clone, Debug, Serialize)]
pub struct ScanRecovered {
    /// The first scan without a record.
    pub first_scan_seq: u64,
    /// The last: the scan committed last.
    pub scan_seq: u64,
    /// The graph generation that scan committed.
    pub generation: u64,
    /// When it committed, Unix microseconds.
    pub committed_us: u64,
    /// Why its SCAN_COMPLETED is missing, as far as can be known.
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_strings_are_distinct_and_parse_back() {
        let mut seen = std::collections::BTreeSet::new();
        for &k in EventKind::ALL {
            assert!(seen.insert(k.as_str()), "{} declared twice", k.as_str());
            assert_eq!(EventKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(EventKind::parse("s.a.u_ACTION"), None);
    }

    /// DESIGN.md section 2: the statuses and the `s.a.u_ACTION` set.
    #[test]
    fn statuses_and_the_sau_action_set_follow_the_design() {
        let status = |s: &str| EventKind::parse(s).map(EventKind::status);
        assert_eq!(status("APPROVAL"), Some("APPROVED"));
        assert_eq!(status("REJECTION"), Some("REJECTED"));
        assert_eq!(status("QUARANTINE"), Some("QUARANTINED"));
        assert_eq!(status("SCAN_COMPLETED"), Some("OK"));
        let sau: Vec<&str> = EventKind::ALL
            .iter()
            .filter(|k| k.is_sau_action())
            .map(|k| k.as_str())
            .collect();
        assert_eq!(
            sau,
            [
                "QUARANTINE",
                "QUARANTINE_REVERTED",
                "APPROVAL",
                "REJECTION",
                "EXECUTION_COMMIT",
                "EXECUTION_ROLLBACK",
                "s.a.u_OVERRIDE"
            ]
        );
    }

    #[test]
    fn an_event_takes_its_type_from_its_payload() {
        let e = NewEvent::of(
            Some("crn:a"),
            "alice",
            "m".into(),
            &LockTimeout {
                crn: "crn:a".into(),
                waited_seconds: 30,
                reason: "busy".into(),
            },
        );
        assert_eq!(e.event_type, "LOCK_TIMEOUT");
        assert_eq!(
            e.payload,
            serde_json::json!({"crn": "crn:a", "waited_seconds": 30, "reason": "busy"})
        );
    }
}

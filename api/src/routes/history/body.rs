//! Bodies of the history endpoints and the wire shapes of a ledger event:
//! the stream envelope of SPEC 6.1 and the history event object. Fields are
//! declared in the order they are written: by name.

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use svc_engine::store::ledger::{Event, VerifyReport};
use utoipa::ToSchema;
use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, Type};
use utoipa::openapi::{RefOr, Schema};

use crate::routes::rfc3339;
use crate::wire::{Crn, listed_str};

/// A ledger event's payload as a JSON object: `null` is `{}` and any other
/// non-object value is kept under `value`.
#[derive(Clone, Copy, Debug)]
pub struct Payload<'a>(pub &'a Value);

impl Serialize for Payload<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(m) => m.serialize(s),
            Value::Null => s.serialize_map(Some(0))?.end(),
            other => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("value", other)?;
                m.end()
            }
        }
    }
}

impl utoipa::PartialSchema for Payload<'_> {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .additional_properties(Some(AdditionalProperties::<Schema>::FreeForm(true)))
            .into()
    }
}

impl ToSchema for Payload<'_> {}

/// One frame of the `/events` stream, a committed ledger event: the
/// envelope of SPEC 6.1 (`event_type`, `timestamp` in Unix seconds,
/// `payload`) plus what a client needs to resume and to check the chain.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Envelope<'a> {
    pub actor: &'a str,
    /// The resource the event is about; empty when none.
    pub crn: &'a str,
    /// For example `SCAN_COMPLETED` (payload a `ScanReport`), `QUARANTINE`, `APPROVAL`,
    /// `HISTORY_PRUNED`.
    pub event_type: &'a str,
    /// SHA-256 of this event in the chain, hex.
    pub hash: String,
    /// `seq` as text.
    pub id: String,
    pub message: &'a str,
    /// Shape depends on `event_type`; a non-object payload is kept under `value`.
    pub payload: Payload<'a>,
    /// Hash of the previous event, hex.
    pub prev_hash: String,
    /// Ledger sequence number; resume with `{"since": seq}`.
    #[schema(minimum = 1)]
    pub seq: u64,
    pub session_id: &'a str,
    /// Unix seconds.
    pub timestamp: u64,
}

/// The stream envelope of SPEC 6.1 of one event, as JSON text.
pub fn envelope_text(e: &Event) -> String {
    serde_json::to_string(&Envelope::of(e)).unwrap_or_default()
}

impl<'a> Envelope<'a> {
    pub fn of(e: &'a Event) -> Envelope<'a> {
        Envelope {
            actor: &e.actor,
            crn: &e.crn,
            event_type: &e.event_type,
            hash: e.hash_hex(),
            id: e.seq.to_string(),
            message: &e.message,
            payload: Payload(&e.payload),
            prev_hash: hex::encode(e.prev_hash),
            seq: e.seq,
            session_id: &e.session_id,
            timestamp: e.ts_us / 1_000_000,
        }
    }
}

/// The one message a client may send on `/events`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StreamClientMessage {
    /// Replay every stored event after this seq, then continue live.
    pub since: u64,
}

listed_str! {
    /// APPROVED for an approval, REJECTED for a rejection, QUARANTINED for a quarantine, OK otherwise.
    EventStatus ["OK", "APPROVED", "REJECTED", "QUARANTINED"]
}

/// A ledger event as the history endpoints show it (SPEC 4.2), plus `seq` and `hash`.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = HistoryEvent)]
pub struct HistoryEvent<'a> {
    pub actor: &'a str,
    /// The resource the event is about; empty when none.
    pub crn: &'a str,
    /// SHA-256 of the event in the hash chain, hex.
    pub hash: String,
    /// The sequence number as text.
    pub id: String,
    pub message: &'a str,
    /// The event payload (free-form, for example `savings_usd`); a non-object payload is kept
    /// under `value`.
    pub meta: Payload<'a>,
    #[schema(minimum = 1)]
    pub seq: u64,
    /// The daemon run that wrote the event.
    pub session_id: &'a str,
    pub status: EventStatus,
    #[schema(format = DateTime)]
    pub ts: String,
    /// Event type, for example `SCAN_COMPLETED`, `APPROVAL`, `HISTORY_PRUNED`,
    /// `SCAN_RECOVERED` (committed scans recorded after a crash). `UNREADABLE`
    /// stands in for a stored event that cannot be decoded; its message says why.
    #[serde(rename = "type")]
    pub ty: &'a str,
}

impl<'a> HistoryEvent<'a> {
    pub fn of(e: &'a Event) -> HistoryEvent<'a> {
        HistoryEvent {
            actor: &e.actor,
            crn: &e.crn,
            hash: e.hash_hex(),
            id: e.seq.to_string(),
            message: &e.message,
            meta: Payload(&e.payload),
            seq: e.seq,
            session_id: &e.session_id,
            status: EventStatus::from(e.status()),
            ts: rfc3339(e.ts_us),
            ty: &e.event_type,
        }
    }
}

/// `GET /api/v1/history`: one page of matching events, newest first.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HistoryPage<'a> {
    pub events: Vec<HistoryEvent<'a>>,
    /// Cursor of the next page; an empty string on the last page.
    pub next_cursor: String,
    /// Events matching the filters, over all pages.
    pub total: u64,
}

/// `GET /api/v1/history/summary`.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HistorySummary {
    pub approved: u64,
    /// RFC 3339 time of the oldest stored event; an empty string when the ledger is empty.
    pub first_event: String,
    /// RFC 3339 time of the newest stored event; an empty string when the ledger is empty.
    pub last_event: String,
    pub quarantined: u64,
    pub rejected: u64,
    pub session_count: u64,
    pub total_events: u64,
    pub total_savings_usd: f64,
}

/// `GET /api/v1/history/resource`: the lifecycle of one resource, newest first.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResourceHistory<'a> {
    pub crn: Crn,
    pub events: Vec<HistoryEvent<'a>>,
    pub total: u64,
}

/// One daemon run with stored events.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Session {
    pub event_count: u64,
    #[schema(format = DateTime)]
    pub first_event: String,
    #[schema(format = DateTime)]
    pub last_event: String,
    pub session_id: String,
}

/// `GET /api/v1/history/sessions`.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionList {
    /// The id of the running daemon's session.
    pub current: String,
    pub sessions: Vec<Session>,
}

/// `POST /api/v1/history/prune`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct PruneRequest {
    /// Events older than this many days are removed; the ledger keeps at least one day (a negative
    /// value is a 400, 0 a 422).
    #[schema(minimum = 1)]
    pub max_age_days: i64,
}

/// What a prune removed.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PruneResult {
    #[schema(minimum = 0)]
    pub max_age_days: i64,
    /// Events removed.
    pub pruned: u64,
}

/// The first link of the hash chain that does not hold.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BrokenLink {
    /// What is wrong, for example `hash mismatch: the stored event is not the one that was
    /// appended`.
    pub reason: String,
    /// The first seq that is missing, does not decode, does not link to its predecessor or does
    /// not hash to its stored hash.
    #[schema(minimum = 1)]
    pub seq: u64,
}

/// The prune checkpoint a verification starts from.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// The last pruned seq (the `through_seq` of the `HISTORY_PRUNED` event that removed it).
    #[schema(minimum = 1)]
    pub through_seq: u64,
    /// That event's hash, lowercase hex: the first stored event links to it.
    pub hash: String,
}

/// The wire form of a chain verification, shared by the API and
/// `svc ledger verify --file`.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LedgerVerification {
    /// Events whose link and hash were checked and found right (up to the first broken one).
    pub events: u64,
    /// The first link that does not hold; null when the chain is whole.
    #[schema(required = true)]
    pub first_broken: Option<BrokenLink>,
    /// Where the walk starts after a prune; null when nothing was ever pruned.
    #[schema(required = true)]
    pub checkpoint: Option<Checkpoint>,
    /// First stored seq; 0 when the ledger is empty.
    pub first_seq: u64,
    /// Last stored seq; 0 when the ledger is empty.
    pub last_seq: u64,
    /// True when every stored event links to its predecessor and hashes to its stored hash, with
    /// no gap.
    pub ok: bool,
}

impl From<&VerifyReport> for LedgerVerification {
    fn from(r: &VerifyReport) -> Self {
        LedgerVerification {
            events: r.checked,
            first_broken: r.first_broken.as_ref().map(|b| BrokenLink {
                reason: b.reason.clone(),
                seq: b.seq,
            }),
            checkpoint: r.checkpoint.map(|(through_seq, hash)| Checkpoint {
                through_seq,
                hash: hash.iter().map(|b| format!("{b:02x}")).collect(),
            }),
            first_seq: r.first_seq,
            last_seq: r.last_seq,
            ok: r.ok,
        }
    }
}

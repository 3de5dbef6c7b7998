//! Reads: single events, replay, history pages, resource timelines,
//! summary and sessions, and the types they are asked with and answer
//! ([`HistoryQuery`], [`HistoryPage`], [`Summary`], [`SessionInfo`]).
//! Everything runs in one read transaction.
//!
//! A history query first turns its time bounds into a seq window (time
//! order is seq order), then walks the most selective index in reverse:
//! the CRN's postings when a CRN is given, else the type index (merging
//! several types by seq), else `events` itself. `total` comes from index ordinals where the
//! filters allow it, so it does not cost a scan.

use redb::{ReadOnlyTable, ReadTransaction, ReadableTable, ReadableTableMetadata};

use super::error::LedgerError;
use super::events::{Event, EventKind, SAU_ACTION, sau_action_types, status_of};
use super::tables::{self, SessionRow};
use super::{codec, postings, type_index};

pub const HISTORY_MAX_LIMIT: usize = 500;
pub const HISTORY_DEFAULT_LIMIT: usize = 100;

/// Filters of the history endpoint. Each filter that is set must match.
#[derive(Clone, Debug, Default)]
pub struct HistoryQuery {
    /// An event type, or [`SAU_ACTION`] for every s.a.u decision.
    pub event_type: Option<String>,
    pub crn: Option<String>,
    /// A [`status_of`] value, compared ignoring ASCII case.
    pub status: Option<String>,
    /// Events at or after this time.
    pub since_us: Option<u64>,
    /// Events before this time.
    pub until_us: Option<u64>,
    /// Page size; values outside 1..=[`HISTORY_MAX_LIMIT`] are clamped.
    pub limit: usize,
    /// Cursor: only events with a smaller seq.
    pub before_seq: Option<u64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct HistoryPage {
    /// Newest first.
    pub events: Vec<Event>,
    /// Seq of the last returned event when more events match.
    pub next_cursor: Option<u64>,
    /// All events matching the filters, ignoring cursor and limit.
    pub total: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub total_events: u64,
    pub quarantined: u64,
    pub approved: u64,
    pub rejected: u64,
    pub session_count: u64,
    /// Sum of the numeric `savings_usd` payload fields of the stored events.
    pub total_savings_usd: f64,
    pub first_event_us: Option<u64>,
    pub last_event_us: Option<u64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SessionInfo {
    pub session_id: String,
    pub first_event_us: u64,
    pub last_event_us: u64,
    pub event_count: u64,
}

type Events = ReadOnlyTable<u64, &'static [u8]>;
type Keyed = ReadOnlyTable<(&'static str, u64), &'static [u8]>;

/// Types whose status is not OK.
/// The types whose status is not OK.
fn not_ok_types() -> Vec<&'static str> {
    EventKind::ALL
        .iter()
        .filter(|k| k.status() != "OK")
        .map(|k| k.as_str())
        .collect()
}

/// The stored event, or, when its bytes do not decode, a stand-in that says
/// so ([`Event::unreadable`]): a reader sees where the ledger is damaged
/// instead of losing the whole page.
fn decode_event(seq: u64, bytes: &[u8]) -> Event {
    codec::decode(bytes)
        .and_then(|s| s.to_event(seq))
        .unwrap_or_else(|e| Event::unreadable(seq, &e.to_string()))
}

fn load(events: &Events, seq: u64) -> Result<Event, LedgerError> {
    match events.get(seq)? {
        Some(v) => Ok(decode_event(seq, v.value())),
        None => Err(LedgerError::Corrupt(format!(
            "an index names event {seq}, which is not stored"
        ))),
    }
}

pub(super) fn get(txn: &ReadTransaction, seq: u64) -> Result<Option<Event>, LedgerError> {
    let events = txn.open_table(tables::EVENTS)?;
    match events.get(seq)? {
        Some(v) => Ok(Some(decode_event(seq, v.value()))),
        None => Ok(None),
    }
}

/// Events after `after` in seq order as stored, at most `limit`: what
/// another node imports ([`super::Ledger::import`] checks them).
pub(super) fn stored_after(
    txn: &ReadTransaction,
    after: u64,
    limit: usize,
) -> Result<Vec<(u64, Vec<u8>)>, LedgerError> {
    let Some(from) = after.checked_add(1) else {
        return Ok(Vec::new());
    };
    let events = txn.open_table(tables::EVENTS)?;
    let mut out = Vec::new();
    for item in events.range(from..)?.take(limit) {
        let (k, v) = item?;
        out.push((k.value(), v.value().to_vec()));
    }
    Ok(out)
}

/// Events after `after` in seq order, stopping before the first one that
/// does not decode: that one is an error only when it would come first, so
/// a replay or an export takes everything up to the damage, then stops there.
pub(super) fn events_after(txn: &ReadTransaction, after: u64, limit: usize) -> Result<Vec<Event>, LedgerError> {
    let Some(from) = after.checked_add(1) else {
        return Ok(Vec::new());
    };
    let events = txn.open_table(tables::EVENTS)?;
    let mut out = Vec::with_capacity(limit.min(HISTORY_MAX_LIMIT));
    for item in events.range(from..)?.take(limit) {
        let (k, v) = item?;
        let seq = k.value();
        match codec::decode(v.value()).and_then(|s| s.to_event(seq)) {
            Ok(e) => out.push(e),
            Err(_) if !out.is_empty() => break,
            Err(e) => return Err(LedgerError::Corrupt(format!("event {seq} cannot be read: {e}"))),
        }
    }
    Ok(out)
}

/// Which event types a query's type and status filters admit.
#[derive(Debug, PartialEq)]
enum TypeSet {
    All,
    Only(Vec<String>),
    AllExcept(Vec<&'static str>),
}

impl TypeSet {
    fn resolve(event_type: Option<&str>, status: Option<&str>) -> TypeSet {
        let status_matches = |t: &str| status.is_none_or(|s| status_of(t).eq_ignore_ascii_case(s));
        match event_type {
            Some(SAU_ACTION) => TypeSet::Only(
                sau_action_types()
                    .filter(|t| status_matches(t))
                    .map(str::to_owned)
                    .collect(),
            ),
            Some(t) if status_matches(t) => TypeSet::Only(vec![t.to_owned()]),
            Some(_) => TypeSet::Only(Vec::new()),
            None => match status {
                None => TypeSet::All,
                Some(s) if s.eq_ignore_ascii_case("OK") => TypeSet::AllExcept(not_ok_types()),
                Some(_) => TypeSet::Only(
                    not_ok_types()
                        .into_iter()
                        .filter(|t| status_matches(t))
                        .map(str::to_owned)
                        .collect(),
                ),
            },
        }
    }

    fn admits(&self, t: &str) -> bool {
        match self {
            TypeSet::All => true,
            TypeSet::Only(types) => types.iter().any(|x| x == t),
            TypeSet::AllExcept(types) => !types.contains(&t),
        }
    }
}

/// Takes up to `limit` seqs from a newest-first stream and says whether
/// more follow.
fn take_page(
    seqs: impl Iterator<Item = Result<u64, LedgerError>>,
    events: &Events,
    limit: usize,
) -> Result<(Vec<Event>, bool), LedgerError> {
    let mut out = Vec::with_capacity(limit);
    for seq in seqs {
        let seq = seq?;
        if out.len() == limit {
            return Ok((out, true));
        }
        out.push(load(events, seq)?);
    }
    Ok((out, false))
}

pub(super) fn history(txn: &ReadTransaction, q: &HistoryQuery) -> Result<HistoryPage, LedgerError> {
    let limit = q.limit.clamp(1, HISTORY_MAX_LIMIT);
    let events = txn.open_table(tables::EVENTS)?;
    let empty = HistoryPage {
        events: Vec::new(),
        next_cursor: None,
        total: 0,
    };
    let Some((first, last)) = tables::seq_bounds(&events)? else {
        return Ok(empty);
    };
    // The seq window `lo..hi` of the time bounds.
    let mut lo = first;
    let mut hi = last + 1;
    if let Some(since) = q.since_us {
        lo = lo.max(tables::seq_at_or_after(&events, since)?.unwrap_or(hi));
    }
    if let Some(until) = q.until_us {
        hi = hi.min(tables::seq_at_or_after(&events, until)?.unwrap_or(hi));
    }
    if lo >= hi {
        return Ok(empty);
    }
    let page_hi = q.before_seq.map_or(hi, |b| b.min(hi));
    let types = TypeSet::resolve(q.event_type.as_deref(), q.status.as_deref());

    let (page, more, total) = if let Some(crn) = q.crn.as_deref() {
        by_crn(txn, &events, crn, &types, lo, hi, page_hi, limit)?
    } else {
        match &types {
            TypeSet::Only(list) => by_types(txn, &events, list, lo, hi, page_hi, limit)?,
            TypeSet::All | TypeSet::AllExcept(_) => {
                let by_type: Keyed = txn.open_table(tables::BY_TYPE)?;
                let mut total = hi - lo;
                if let TypeSet::AllExcept(excluded) = &types {
                    for t in excluded.iter() {
                        total -= type_index::count(&by_type, t, lo, hi)?.min(total);
                    }
                }
                let seqs = events.range(lo..page_hi.max(lo))?.rev().filter_map(|item| {
                    let res = item.map_err(LedgerError::from).map(|(k, v)| {
                        // An event whose type cannot be read is shown (as
                        // unreadable) wherever a type filter does not rule it out.
                        let admitted = codec::peek_type(v.value()).map_or(types == TypeSet::All, |t| types.admits(t));
                        admitted.then(|| k.value())
                    });
                    res.transpose()
                });
                let (page, more) = take_page(seqs, &events, limit)?;
                (page, more, total)
            }
        }
    };
    let next_cursor = if more { page.last().map(|e| e.seq) } else { None };
    Ok(HistoryPage {
        events: page,
        next_cursor,
        total,
    })
}

/// Page and total of a query with a CRN filter: the CRN's postings, newest
/// first. Events on the page are checked for the CRN (a hash collision is
/// skipped); with a type filter every match is read for its type, without
/// one the events past the page are only counted.
#[allow(clippy::too_many_arguments)]
fn by_crn(
    txn: &ReadTransaction,
    events: &Events,
    crn: &str,
    types: &TypeSet,
    lo: u64,
    hi: u64,
    page_hi: u64,
    limit: usize,
) -> Result<(Vec<Event>, bool, u64), LedgerError> {
    let recent = txn.open_table(tables::CRN_RECENT)?;
    let runs = txn.open_table(tables::CRN_RUNS)?;
    let mut page = Vec::with_capacity(limit.min(HISTORY_MAX_LIMIT));
    let mut more = false;
    let mut total = 0u64;
    for seq in postings::crn_seqs(&recent, &runs, crn, lo, hi)?.into_iter().rev() {
        let on_page = seq < page_hi && page.len() < limit;
        if *types == TypeSet::All && !on_page {
            total += 1;
            more |= seq < page_hi;
            continue;
        }
        let bytes = events
            .get(seq)?
            .ok_or_else(|| LedgerError::Corrupt(format!("an index names event {seq}, which is not stored")))?;
        let event = match codec::decode(bytes.value()) {
            Ok(stored) if stored.crn != crn || !types.admits(stored.event_type) => continue,
            Ok(stored) => stored
                .to_event(seq)
                .unwrap_or_else(|e| Event::unreadable(seq, &e.to_string())),
            // Indexed under this CRN's hash: shown as unreadable where no
            // type filter rules it out.
            Err(_) if *types != TypeSet::All => continue,
            Err(e) => Event::unreadable(seq, &e.to_string()),
        };
        total += 1;
        if seq < page_hi {
            if page.len() < limit {
                page.push(event);
            } else {
                more = true;
            }
        }
    }
    Ok((page, more, total))
}

/// Page and total of a query over a list of types, from the type index, merging
/// the types' ranges by seq, newest first.
fn by_types(
    txn: &ReadTransaction,
    events: &Events,
    types: &[String],
    lo: u64,
    hi: u64,
    page_hi: u64,
    limit: usize,
) -> Result<(Vec<Event>, bool, u64), LedgerError> {
    let index: Keyed = txn.open_table(tables::BY_TYPE)?;
    let mut total = 0u64;
    let mut streams = Vec::with_capacity(types.len());
    for t in types {
        total += type_index::count(&index, t, lo, hi)?;
        streams.push(type_index::SeqsDesc::new(&index, t, lo, page_hi.max(lo))?.peekable());
    }
    let merged = std::iter::from_fn(|| {
        let mut best: Option<(usize, u64)> = None;
        for (i, s) in streams.iter_mut().enumerate() {
            match s.peek() {
                Some(Ok(seq)) if best.is_none_or(|(_, b)| *seq > b) => best = Some((i, *seq)),
                Some(Ok(_)) | None => {}
                Some(Err(_)) => return s.next(),
            }
        }
        let (i, _) = best?;
        streams[i].next()
    });
    let (page, more) = take_page(merged, events, limit)?;
    Ok((page, more, total))
}

pub(super) fn resource(txn: &ReadTransaction, crn: &str, limit: usize) -> Result<(Vec<Event>, u64), LedgerError> {
    let events = txn.open_table(tables::EVENTS)?;
    let (page, _, total) = by_crn(txn, &events, crn, &TypeSet::All, 0, u64::MAX, u64::MAX, limit.max(1))?;
    Ok((page.into_iter().take(limit).collect(), total))
}

pub(super) fn summary(txn: &ReadTransaction) -> Result<Summary, LedgerError> {
    let events = txn.open_table(tables::EVENTS)?;
    let by_type: Keyed = txn.open_table(tables::BY_TYPE)?;
    let sessions = txn.open_table(tables::SESSIONS)?;
    let meta = txn.open_table(tables::META)?;
    let count = |t: &str| type_index::count(&by_type, t, 0, u64::MAX);
    let ts_of = |entry: Option<(redb::AccessGuard<'_, u64>, redb::AccessGuard<'_, &[u8]>)>| {
        entry
            .map(|(k, v)| {
                codec::decode(v.value())
                    .map(|s| s.ts_us)
                    .map_err(|e| LedgerError::Corrupt(format!("event {}: {e}", k.value())))
            })
            .transpose()
    };
    Ok(Summary {
        total_events: events.len()?,
        quarantined: count(EventKind::Quarantine.as_str())?,
        approved: count(EventKind::Approval.as_str())?,
        rejected: count("REJECTION")?,
        session_count: sessions.len()?,
        total_savings_usd: tables::read_savings(&meta)?,
        first_event_us: ts_of(events.first()?)?,
        last_event_us: ts_of(events.last()?)?,
    })
}

pub(super) fn sessions(txn: &ReadTransaction) -> Result<Vec<SessionInfo>, LedgerError> {
    let table = txn.open_table(tables::SESSIONS)?;
    let mut rows = Vec::new();
    for item in table.iter()? {
        let (k, v) = item?;
        rows.push((k.value().to_owned(), SessionRow::from_tuple(v.value())));
    }
    rows.sort_by_key(|(_, r)| r.first_seq);
    Ok(rows
        .into_iter()
        .map(|(session_id, r)| SessionInfo {
            session_id,
            first_event_us: r.first_us,
            last_event_us: r.last_us,
            event_count: r.count,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::TypeSet;

    #[test]
    fn type_and_status_filters_resolve_to_type_sets() {
        let only = |v: &[&str]| TypeSet::Only(v.iter().map(|s| (*s).to_owned()).collect());
        assert_eq!(TypeSet::resolve(None, None), TypeSet::All);
        assert_eq!(
            TypeSet::resolve(Some("SCAN_COMPLETED"), None),
            only(&["SCAN_COMPLETED"])
        );
        assert_eq!(
            TypeSet::resolve(Some("SCAN_COMPLETED"), Some("OK")),
            only(&["SCAN_COMPLETED"])
        );
        assert_eq!(TypeSet::resolve(Some("SCAN_COMPLETED"), Some("APPROVED")), only(&[]));
        assert_eq!(TypeSet::resolve(None, Some("approved")), only(&["APPROVAL"]));
        assert_eq!(TypeSet::resolve(None, Some("BOGUS")), only(&[]));
        assert!(matches!(TypeSet::resolve(None, Some("OK")), TypeSet::AllExcept(_)));
        assert_eq!(
            TypeSet::resolve(Some("s.a.u_ACTION"), Some("OK")),
            only(&[
                "QUARANTINE_REVERTED",
                "EXECUTION_COMMIT",
                "EXECUTION_ROLLBACK",
                "s.a.u_OVERRIDE"
            ])
        );
        assert!(TypeSet::resolve(Some("s.a.u_ACTION"), None).admits("APPROVAL"));
    }
}

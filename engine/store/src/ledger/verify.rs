//! Walking the hash chain, and what the walk found ([`VerifyReport`]).

use redb::ReadTransaction;

use super::codec;
use super::error::{BrokenLink, LedgerError};
use super::tables;

#[derive(Clone, Debug, PartialEq)]
pub struct VerifyReport {
    /// First and last stored seq; both 0 when the ledger is empty.
    pub first_seq: u64,
    pub last_seq: u64,
    /// Events whose link and hash were checked and found right.
    pub checked: u64,
    pub ok: bool,
    /// The first problem found, e.g. "event 17: hash mismatch".
    pub problem: Option<String>,
    /// Where the chain first breaks: the seq of the first event that cannot
    /// be trusted and what is wrong with it.
    pub first_broken: Option<BrokenLink>,
    /// The prune checkpoint the walk starts from: the last pruned seq and
    /// its hash, to which the first stored event links (a `HISTORY_PRUNED`
    /// event records the same); `None` when nothing was ever pruned.
    pub checkpoint: Option<(u64, [u8; 32])>,
}

/// Checks that seqs run gap-free from the anchor, that each event links to
/// its predecessor's hash (the first one to the anchor's), that each hash
/// recomputes, and that the head record names the last event. Stops at the
/// first problem and names the first seq that cannot be trusted.
pub(super) fn verify(txn: &ReadTransaction) -> Result<VerifyReport, LedgerError> {
    let events = txn.open_table(tables::EVENTS)?;
    let meta = txn.open_table(tables::META)?;
    let anchor = tables::read_anchor(&meta)?;
    let head = tables::read_head(&meta)?;
    let mut report = VerifyReport {
        first_seq: 0,
        last_seq: 0,
        checked: 0,
        ok: true,
        problem: None,
        first_broken: None,
        checkpoint: (anchor.seq > 1).then_some((anchor.seq - 1, anchor.prev_hash)),
    };
    let fail = |mut r: VerifyReport, seq: u64, reason: String, problem: String| {
        r.ok = false;
        r.problem = Some(problem);
        r.first_broken = Some(BrokenLink { seq, reason });
        Ok(r)
    };
    let Some((first, last)) = tables::seq_bounds(&events)? else {
        if head.seq != 0 {
            let reason = format!("head records event {} but no event is stored", head.seq);
            return fail(report, anchor.seq, reason.clone(), reason);
        }
        return Ok(report);
    };
    report.first_seq = first;
    report.last_seq = last;
    if first != anchor.seq {
        let problem = format!("chain starts at event {first} but its anchor is event {}", anchor.seq);
        let reason = if first > anchor.seq {
            format!("missing: the chain should start here but starts at event {first}")
        } else {
            format!("stored before the chain anchor (event {})", anchor.seq)
        };
        return fail(report, first.min(anchor.seq), reason, problem);
    }
    let mut prev_seq = first - 1;
    let mut prev_hash = anchor.prev_hash;
    for item in events.range(first..)? {
        let (k, v) = item?;
        let seq = k.value();
        if seq != prev_seq + 1 {
            let reason = format!("missing: the sequence jumps from {prev_seq} to {seq}");
            return fail(
                report,
                prev_seq + 1,
                reason,
                format!("gap between {prev_seq} and {seq}"),
            );
        }
        let stored = match codec::decode(v.value()) {
            Ok(s) => s,
            Err(e) => {
                let reason = format!("cannot decode: {e}");
                return fail(report, seq, reason.clone(), format!("event {seq}: {reason}"));
            }
        };
        if stored.prev_hash != prev_hash {
            let what = if seq == anchor.seq {
                "the chain anchor".to_owned()
            } else {
                format!("event {prev_seq}")
            };
            let reason = format!("prev_hash does not match {what}");
            return fail(report, seq, reason.clone(), format!("event {seq}: {reason}"));
        }
        if stored.compute_hash(seq) != stored.hash {
            let reason = "hash mismatch: the stored event is not the one that was appended".to_owned();
            return fail(report, seq, reason, format!("event {seq}: hash mismatch"));
        }
        prev_seq = seq;
        prev_hash = stored.hash;
        report.checked += 1;
    }
    if head.seq != last {
        let problem = format!("head records event {} but the chain ends at event {last}", head.seq);
        let seq = if head.seq > last { last + 1 } else { head.seq + 1 };
        return fail(report, seq, problem.clone(), problem);
    }
    if head.hash != prev_hash {
        let reason = "the head record's hash does not match this event".to_owned();
        return fail(report, last, reason, format!("head hash does not match event {last}"));
    }
    Ok(report)
}

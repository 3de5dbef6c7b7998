//! Walking the hash chain.

use redb::ReadTransaction;

use super::codec;
use super::tables;
use super::{LedgerError, VerifyReport};

/// Checks that seqs run gap-free from the anchor, that each event links to
/// its predecessor's hash (the first one to the anchor's), that each hash
/// recomputes, and that the head record names the last event. Stops at the
/// first problem.
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
    };
    let fail = |mut r: VerifyReport, problem: String| {
        r.ok = false;
        r.problem = Some(problem);
        Ok(r)
    };
    let Some((first, last)) = tables::seq_bounds(&events)? else {
        if head.seq != 0 {
            return fail(
                report,
                format!("head records event {} but no event is stored", head.seq),
            );
        }
        return Ok(report);
    };
    report.first_seq = first;
    report.last_seq = last;
    if first != anchor.seq {
        return fail(
            report,
            format!("chain starts at event {first} but its anchor is event {}", anchor.seq),
        );
    }
    let mut prev_seq = first - 1;
    let mut prev_hash = anchor.prev_hash;
    for item in events.range(first..)? {
        let (k, v) = item?;
        let seq = k.value();
        if seq != prev_seq + 1 {
            return fail(report, format!("gap between {prev_seq} and {seq}"));
        }
        let stored = match codec::decode(v.value()) {
            Ok(s) => s,
            Err(e) => return fail(report, format!("event {seq}: cannot decode: {e}")),
        };
        if stored.prev_hash != prev_hash {
            let what = if seq == anchor.seq {
                "the chain anchor".to_owned()
            } else {
                format!("event {prev_seq}")
            };
            return fail(report, format!("event {seq}: prev_hash does not match {what}"));
        }
        if stored.compute_hash(seq) != stored.hash {
            return fail(report, format!("event {seq}: hash mismatch"));
        }
        prev_seq = seq;
        prev_hash = stored.hash;
        report.checked += 1;
    }
    if head.seq != last {
        return fail(
            report,
            format!("head records event {} but the chain ends at event {last}", head.seq),
        );
    }
    if head.hash != prev_hash {
        return fail(report, format!("head hash does not match event {last}"));
    }
    Ok(report)
}

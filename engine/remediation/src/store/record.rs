//! A remediation item as stored in `remediation_items`: the CRN is the
//! table's key, the value a binary record (docs/formats.md, "Remediation
//! items"). A value written before the record existed is a JSON object
//! (its first byte `{`); it is read as one and written back as a record
//! the next time the item changes.
//!
//! ```text
//! u8       format (1)
//! u8       stage (its position in STAGES)
//! u8       flags: 1 proof, 2 proof safe, 4 held_by, 8 override,
//!          16 failure, 32 saga_id, 64 rejected
//! f64      savings_usd_mo, f64 risk_score
//! varint   blast_radius, flagged_us, stage_us
//! text     type, state, rule, action, reason, reachability, plan_hash
//! [text    proof reason, proof source]              flag 1
//! varint   blockers, then each as text
//! [text]   held_by                                  flag 4
//! [text    override actor, reason, plan_hash]       flag 8
//! [text]   failure, saga_id, rejected               flags 16, 32, 64
//! ```
//!
//! Texts are UTF-8 behind a LEB128 length. Decoding never panics: a short,
//! unknown or malformed value is a [`DecodeError`] naming the field.

use svc_store::DecodeError;
use svc_store::bytes::{Reader, Writer};

use crate::{Item, Name, NoteBox, Notes, Override, Proof, STAGES};

/// The record's format byte.
const FORMAT: u8 = 1;

const PROOF: u8 = 1;
const PROOF_SAFE: u8 = 2;
const HELD: u8 = 4;
const OVERRIDE: u8 = 8;
const FAILURE: u8 = 16;
const SAGA: u8 = 32;
const REJECTED: u8 = 64;

/// Appends `i`'s record (without its CRN, the key) to `out`.
pub fn encode(out: &mut Vec<u8>, i: &Item) {
    let stage = STAGES.iter().position(|s| *s == i.stage).unwrap_or(0);
    let mut flags = 0;
    for (set, bit) in [
        (i.proof.is_some(), PROOF),
        (i.proof.as_ref().is_some_and(|p| p.safe), PROOF_SAFE),
        (i.notes().held_by.is_some(), HELD),
        (i.notes().override_by.is_some(), OVERRIDE),
        (i.notes().failure.is_some(), FAILURE),
        (i.notes().saga_id.is_some(), SAGA),
        (i.notes().rejected.is_some(), REJECTED),
    ] {
        if set {
            flags |= bit;
        }
    }
    let mut w = Writer::new(out);
    w.u8(FORMAT);
    w.u8(u8::try_from(stage).unwrap_or(0));
    w.u8(flags);
    w.f64(i.savings_usd_mo);
    w.f64(i.risk_score);
    w.varint(i.blast_radius);
    w.varint(i.flagged_us);
    w.varint(i.stage_us);
    for t in [&i.ty, &i.state, &i.rule, &i.action] {
        w.str_varint(t);
    }
    w.str_varint(&i.reason);
    w.str_varint(&i.reachability);
    w.str_varint(&i.plan_hash);
    if let Some(p) = &i.proof {
        w.str_varint(&p.reason);
        w.str_varint(&p.source);
    }
    w.varint(i.notes().blockers.len() as u64);
    for b in &i.notes().blockers {
        w.str_varint(b);
    }
    if let Some(h) = &i.notes().held_by {
        w.str_varint(h);
    }
    if let Some(o) = &i.notes().override_by {
        w.str_varint(&o.actor);
        w.str_varint(&o.reason);
        w.str_varint(&o.plan_hash);
    }
    for t in [&i.notes().failure, &i.notes().saga_id, &i.notes().rejected]
        .into_iter()
        .flatten()
    {
        w.str_varint(t);
    }
}

/// Whether `value` is a JSON object written before the record existed.
pub fn is_json(value: &[u8]) -> bool {
    value.first() == Some(&b'{')
}

/// The item stored under `crn` as `value`, a record.
pub fn decode(crn: &str, value: &[u8]) -> Result<Item, DecodeError> {
    let mut r = Reader::new(value);
    if r.u8("item format")? != FORMAT {
        return Err(DecodeError("item format"));
    }
    let stage = *STAGES
        .get(usize::from(r.u8("item stage")?))
        .ok_or(DecodeError("item stage"))?;
    let flags = r.u8("item flags")?;
    if flags & 0x80 != 0 {
        return Err(DecodeError("item flags"));
    }
    let savings_usd_mo = r.f64("item savings")?;
    let risk_score = r.f64("item risk score")?;
    let blast_radius = r.varint("item blast radius")?;
    let flagged_us = r.varint("item flagged time")?;
    let stage_us = r.varint("item stage time")?;
    let ty = Name::new(r.str_varint("item type")?);
    let state = Name::new(r.str_varint("item state")?);
    let rule = Name::new(r.str_varint("item rule")?);
    let action = Name::new(r.str_varint("item action")?);
    let reason = r.str_varint("item reason")?.to_owned();
    let reachability = Name::new(r.str_varint("item reachability")?);
    let plan_hash = r.str_varint("item plan hash")?.to_owned();
    let proof = if flags & PROOF != 0 {
        Some(Box::new(Proof {
            safe: flags & PROOF_SAFE != 0,
            reason: r.str_varint("item proof reason")?.to_owned(),
            source: Name::new(r.str_varint("item proof source")?),
        }))
    } else {
        None
    };
    let blockers = r.varint("item blockers")?;
    // Each blocker takes at least its length byte.
    if blockers > r.remaining() as u64 {
        return Err(DecodeError("item blockers"));
    }
    let blockers = (0..blockers)
        .map(|_| r.str_varint("item blocker").map(str::to_owned))
        .collect::<Result<Vec<_>, _>>()?;
    let mut text = |what: &'static str| r.str_varint(what).map(str::to_owned);
    let held_by = (flags & HELD != 0).then(|| text("item held by")).transpose()?;
    let override_by = (flags & OVERRIDE != 0)
        .then(|| -> Result<_, DecodeError> {
            Ok(Override {
                actor: text("item override actor")?,
                reason: text("item override reason")?,
                plan_hash: text("item override plan hash")?,
            })
        })
        .transpose()?;
    let mut text_if = |bit: u8, what: &'static str| (flags & bit != 0).then(|| text(what)).transpose();
    let failure = text_if(FAILURE, "item failure")?;
    let saga_id = text_if(SAGA, "item saga id")?;
    let rejected = text_if(REJECTED, "item rejected")?;
    r.end("item record")?;
    Ok(Item {
        crn: crn.to_owned(),
        stage,
        ty,
        state,
        rule,
        action,
        reason,
        savings_usd_mo,
        risk_score,
        reachability,
        blast_radius,
        proof,
        plan_hash,
        notes: NoteBox::of(Notes {
            blockers,
            held_by,
            override_by,
            failure,
            saga_id,
            rejected,
        }),
        flagged_us,
        stage_us,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use svc_graph::graph::Phase;

    fn full() -> Item {
        let mut i = Item::new("crn:svc:aws:us-east-1:ec2:volume:1:vol-1".into(), 7);
        i.stage = Phase::SauGate;
        i.stage_us = 9;
        i.ty = Name::new("aws_ebs_volume");
        i.state = Name::new("available");
        i.rule = Name::new("unattached-volume");
        i.action = Name::new("delete");
        i.reason = "a \"quoted\" reason\nwith é".into();
        i.reachability = Name::new("unreachable");
        i.savings_usd_mo = 12.5;
        i.risk_score = 0.25;
        i.blast_radius = 300;
        i.plan_hash = "ab".repeat(32);
        i.proof = Some(Box::new(Proof {
            safe: true,
            reason: "no attachments".into(),
            source: Name::new("plugin"),
        }));
        i.notes_mut().blockers = vec!["policy:keep-prod".into(), "unsafe".into()];
        i.notes_mut().held_by = Some("alice".into());
        i.notes_mut().override_by = Some(Override {
            actor: "ops".into(),
            reason: "ticket 7".into(),
            plan_hash: "cd".into(),
        });
        i.notes_mut().failure = Some("provider said no".into());
        i.notes_mut().saga_id = Some("saga-1".into());
        i.notes_mut().rejected = Some("bob: keep".into());
        i
    }

    #[test]
    fn every_field_round_trips_and_each_optional_one_alone() {
        let i = full();
        let mut buf = Vec::new();
        encode(&mut buf, &i);
        assert!(!is_json(&buf));
        assert_eq!(decode(&i.crn, &buf).unwrap(), i);
        let bare = Item::new(i.crn.clone(), 3);
        buf.clear();
        encode(&mut buf, &bare);
        assert_eq!(decode(&i.crn, &buf).unwrap(), bare);
        let one_at_a_time: [fn(&mut Item); 7] = [
            |i| i.proof = None,
            |i| i.notes_mut().held_by = None,
            |i| i.notes_mut().override_by = None,
            |i| i.notes_mut().failure = None,
            |i| i.notes_mut().saga_id = None,
            |i| i.notes_mut().rejected = None,
            |i| i.notes_mut().blockers.clear(),
        ];
        for clear in one_at_a_time {
            let mut i = full();
            clear(&mut i);
            buf.clear();
            encode(&mut buf, &i);
            assert_eq!(decode(&i.crn, &buf).unwrap(), i);
        }
    }

    #[test]
    fn a_record_cut_short_or_altered_is_an_error_not_a_panic() {
        let i = full();
        let mut buf = Vec::new();
        encode(&mut buf, &i);
        for n in 0..buf.len() {
            assert!(decode(&i.crn, &buf[..n]).is_err(), "cut at {n}");
        }
        let mut longer = buf.clone();
        longer.push(0);
        assert_eq!(decode(&i.crn, &longer).unwrap_err(), DecodeError("item record"));
        let mut wrong = buf.clone();
        wrong[0] = 2;
        assert_eq!(decode(&i.crn, &wrong).unwrap_err(), DecodeError("item format"));
        wrong = buf.clone();
        wrong[1] = 6;
        assert_eq!(decode(&i.crn, &wrong).unwrap_err(), DecodeError("item stage"));
        // Every byte flipped in turn: an error or some item, never a panic.
        for k in 0..buf.len() {
            let mut b = buf.clone();
            b[k] ^= 0xff;
            let _ = decode(&i.crn, &b);
        }
    }

    #[test]
    fn a_record_is_a_third_of_the_json_it_replaces() {
        let mut i = full();
        i.notes_mut().held_by = None;
        i.notes_mut().override_by = None;
        i.notes_mut().failure = None;
        i.notes_mut().saga_id = None;
        i.notes_mut().rejected = None;
        i.notes_mut().blockers.clear();
        let mut record = Vec::new();
        encode(&mut record, &i);
        let json = serde_json::to_vec(&super::super::item_json(&i)).unwrap();
        assert!(
            record.len() * 2 < json.len(),
            "record {} bytes, JSON {}",
            record.len(),
            json.len()
        );
    }
}

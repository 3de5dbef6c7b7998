//! Cost signals in `graph.redb`: the per-type totals of each scan and the
//! anomalies of the last one.
//!
//! - `signal_history`: `scan_seq -> totals`, one value per scan: every
//!   `(provider, type)` with its active count, cost and waste. Only the
//!   newest `keep` scans stay (older ones are deleted as each is written).
//! - `signal_anomalies`: `scan_seq -> anomalies`, the last analysed scan
//!   only, so a restart serves them until the next scan.
//!
//! Written in one durable transaction right after the scan's commit.
//! Types are stored by name, so the values do not depend on symbol numbers.
//! Decoding never panics: a malformed value is a `Corrupt` error.

use redb::{ReadableDatabase, ReadableTable, TableDefinition, TableError};

use crate::signal::{Anomalies, BaselineKind, ChangeKind, NodeAnomaly, ScanTotals, TypeAnomaly, TypeKey, TypeTotals};
use svc_graph::intern::Interner;
use svc_store::bytes::{DecodeError, Reader, Writer};
use svc_store::{GraphStore, StoreError};

const HISTORY: TableDefinition<u64, &[u8]> = TableDefinition::new("signal_history");
const ANOMALIES: TableDefinition<u64, &[u8]> = TableDefinition::new("signal_anomalies");

const TOTALS_V1: u8 = 1;
const ANOMALIES_V1: u8 = 1;

pub fn encode_totals(t: &ScanTotals, interner: &Interner) -> Vec<u8> {
    let reader = interner.reader();
    let mut out = Vec::with_capacity(16 + t.types.len() * 64);
    let mut w = Writer::new(&mut out);
    w.u8(TOTALS_V1);
    w.u64(t.scan_seq);
    w.u64(t.at_us);
    w.u32(t.types.len() as u32);
    for (k, v) in &t.types {
        w.str(reader.resolve(k.provider));
        w.str(reader.resolve(k.ty));
        w.u64(v.count);
        w.f64(v.cost_usd_mo);
        w.f64(v.waste_usd_mo);
    }
    out
}

pub fn decode_totals(buf: &[u8], interner: &Interner) -> Result<ScanTotals, DecodeError> {
    let mut r = Reader::new(buf);
    if r.u8("totals version")? != TOTALS_V1 {
        return Err(DecodeError("totals version"));
    }
    let mut t = ScanTotals {
        scan_seq: r.u64("totals scan")?,
        at_us: r.u64("totals time")?,
        types: Default::default(),
    };
    for _ in 0..r.count(32, "totals count")? {
        let key = TypeKey {
            provider: interner.intern(r.str("totals provider")?),
            ty: interner.intern(r.str("totals type")?),
        };
        let v = TypeTotals {
            count: r.u64("totals type count")?,
            cost_usd_mo: r.f64("totals type cost")?,
            waste_usd_mo: r.f64("totals type waste")?,
        };
        t.types.insert(key, v);
    }
    r.end("totals trailing bytes")?;
    Ok(t)
}

pub fn encode_anomalies(a: &Anomalies) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + a.nodes.len() * 128);
    let mut w = Writer::new(&mut out);
    w.u8(ANOMALIES_V1);
    w.u64(a.scan_seq);
    w.u64(a.previous_scan_seq);
    w.u8(a.baseline.to_u8());
    w.u64(a.nodes_compared);
    w.u64(a.nodes_changed);
    w.u64(a.nodes_flagged);
    w.u32(a.nodes.len() as u32);
    for n in &a.nodes {
        w.str(&n.crn);
        w.str(&n.ty);
        w.str(&n.provider);
        w.u8(n.kind.to_u8());
        w.f64(n.previous);
        w.f64(n.current);
        w.f64(n.z);
    }
    w.u32(a.types.len() as u32);
    for t in &a.types {
        w.str(&t.ty);
        w.str(&t.provider);
        w.f64(t.previous);
        w.f64(t.current);
        w.u64(t.previous_count);
        w.u64(t.count);
        w.f64(t.z);
        w.u64(t.history_changes);
    }
    out
}

pub fn decode_anomalies(buf: &[u8]) -> Result<Anomalies, DecodeError> {
    let mut r = Reader::new(buf);
    if r.u8("anomalies version")? != ANOMALIES_V1 {
        return Err(DecodeError("anomalies version"));
    }
    let mut a = Anomalies {
        scan_seq: r.u64("anomalies scan")?,
        previous_scan_seq: r.u64("anomalies previous scan")?,
        baseline: BaselineKind::from_u8(r.u8("anomalies baseline")?).ok_or(DecodeError("anomalies baseline"))?,
        nodes_compared: r.u64("anomalies compared")?,
        nodes_changed: r.u64("anomalies changed")?,
        nodes_flagged: r.u64("anomalies flagged")?,
        ..Anomalies::default()
    };
    for _ in 0..r.count(37, "node anomaly count")? {
        a.nodes.push(NodeAnomaly {
            crn: r.str("node anomaly crn")?.to_owned(),
            ty: r.str("node anomaly type")?.to_owned(),
            provider: r.str("node anomaly provider")?.to_owned(),
            kind: ChangeKind::from_u8(r.u8("node anomaly kind")?).ok_or(DecodeError("node anomaly kind"))?,
            previous: r.f64("node anomaly previous")?,
            current: r.f64("node anomaly current")?,
            z: r.f64("node anomaly z")?,
        });
    }
    for _ in 0..r.count(48, "type anomaly count")? {
        a.types.push(TypeAnomaly {
            ty: r.str("type anomaly type")?.to_owned(),
            provider: r.str("type anomaly provider")?.to_owned(),
            previous: r.f64("type anomaly previous")?,
            current: r.f64("type anomaly current")?,
            previous_count: r.u64("type anomaly previous count")?,
            count: r.u64("type anomaly count")?,
            z: r.f64("type anomaly z")?,
            history_changes: r.u64("type anomaly history")?,
        });
    }
    r.end("anomalies trailing bytes")?;
    Ok(a)
}

fn signal_corrupt(store: &GraphStore, what: &str, cause: DecodeError) -> StoreError {
    StoreError::Corrupt {
        path: store.path().to_owned(),
        what: what.to_owned(),
        cause,
    }
}

/// Cost history and anomalies in `graph.redb`.
pub trait SignalStore {
    /// Writes one scan's totals and anomalies durably, keeping the newest
    /// `keep` scans of totals and only this scan's anomalies.
    fn put_signal(
        &self,
        totals: &ScanTotals,
        anomalies: &Anomalies,
        interner: &Interner,
        keep: usize,
    ) -> Result<(), StoreError>;

    /// Every stored scan's totals, oldest first (none before the first scan).
    fn load_signal_history(&self, interner: &Interner) -> Result<Vec<ScanTotals>, StoreError>;

    /// The anomalies of the last analysed scan, if any.
    fn load_last_anomalies(&self) -> Result<Option<Anomalies>, StoreError>;
}

impl SignalStore for GraphStore {
    /// Writes one scan's totals and anomalies durably, keeping the newest
    /// `keep` scans of totals and only this scan's anomalies.
    fn put_signal(
        &self,
        totals: &ScanTotals,
        anomalies: &Anomalies,
        interner: &Interner,
        keep: usize,
    ) -> Result<(), StoreError> {
        let err = self.db_err();
        let totals_bytes = encode_totals(totals, interner);
        let anomalies_bytes = encode_anomalies(anomalies);
        let txn = self.begin_write()?;
        {
            let mut h = txn.open_table(HISTORY).map_err(|e| err(e.into()))?;
            h.insert(totals.scan_seq, totals_bytes.as_slice())
                .map_err(|e| err(e.into()))?;
            let mut newest: Vec<u64> = Vec::with_capacity(keep + 1);
            for item in h.iter().map_err(|e| err(e.into()))?.rev().take(keep) {
                newest.push(item.map_err(|e| err(e.into()))?.0.value());
            }
            if newest.len() == keep
                && let Some(&oldest_kept) = newest.last()
            {
                h.retain_in(..oldest_kept, |_, _| false).map_err(|e| err(e.into()))?;
            }
            let mut a = txn.open_table(ANOMALIES).map_err(|e| err(e.into()))?;
            a.retain(|_, _| false).map_err(|e| err(e.into()))?;
            a.insert(anomalies.scan_seq, anomalies_bytes.as_slice())
                .map_err(|e| err(e.into()))?;
        }
        txn.commit()?;
        Ok(())
    }

    /// Every stored scan's totals, oldest first (none before the first scan).
    fn load_signal_history(&self, interner: &Interner) -> Result<Vec<ScanTotals>, StoreError> {
        let err = self.db_err();
        let txn = self.database()?.begin_read().map_err(|e| err(e.into()))?;
        let table = match txn.open_table(HISTORY) {
            Ok(t) => t,
            Err(TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(err(e.into())),
        };
        let mut out = Vec::new();
        for item in table.iter().map_err(|e| err(e.into()))? {
            let (k, v) = item.map_err(|e| err(e.into()))?;
            let t = decode_totals(v.value(), interner).map_err(|e| signal_corrupt(self, "cost history", e))?;
            if t.scan_seq != k.value() {
                return Err(signal_corrupt(
                    self,
                    "cost history",
                    DecodeError("totals stored under another scan"),
                ));
            }
            out.push(t);
        }
        Ok(out)
    }

    /// The anomalies of the last analysed scan, if any.
    fn load_last_anomalies(&self) -> Result<Option<Anomalies>, StoreError> {
        let err = self.db_err();
        let txn = self.database()?.begin_read().map_err(|e| err(e.into()))?;
        let table = match txn.open_table(ANOMALIES) {
            Ok(t) => t,
            Err(TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(err(e.into())),
        };
        let Some(last) = table.last().map_err(|e| err(e.into()))? else {
            return Ok(None);
        };
        decode_anomalies(last.1.value())
            .map(Some)
            .map_err(|e| signal_corrupt(self, "anomalies", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_anomalies() -> Anomalies {
        Anomalies {
            scan_seq: 7,
            previous_scan_seq: 6,
            baseline: BaselineKind::Restart,
            nodes_compared: 100,
            nodes_changed: 3,
            nodes_flagged: 1,
            nodes: vec![NodeAnomaly {
                crn: "crn:svc:aws:us-east-1:ec2:volume:1:vol-1".into(),
                ty: "ec2:volume".into(),
                provider: "aws".into(),
                kind: ChangeKind::Changed,
                previous: 10.0,
                current: 80.5,
                z: 41.2,
            }],
            types: vec![TypeAnomaly {
                ty: "rds:db".into(),
                provider: "aws".into(),
                previous: 100.0,
                current: 900.0,
                previous_count: 2,
                count: 3,
                z: -7.5,
                history_changes: 12,
            }],
        }
    }

    #[test]
    fn values_round_trip_and_every_truncation_is_an_error() {
        let interner = Interner::new();
        let mut t = ScanTotals {
            scan_seq: 9,
            at_us: 1_700_000_000_000_000,
            types: Default::default(),
        };
        t.types.insert(
            TypeKey {
                provider: interner.intern("aws"),
                ty: interner.intern("ec2:volume"),
            },
            TypeTotals {
                count: 4,
                cost_usd_mo: 123.25,
                waste_usd_mo: 40.0,
            },
        );
        let bytes = encode_totals(&t, &interner);
        assert_eq!(decode_totals(&bytes, &interner).unwrap(), t);
        for n in 0..bytes.len() {
            assert!(decode_totals(&bytes[..n], &interner).is_err(), "totals cut at {n}");
        }
        let a = sample_anomalies();
        let bytes = encode_anomalies(&a);
        assert_eq!(decode_anomalies(&bytes).unwrap(), a);
        for n in 0..bytes.len() {
            assert!(decode_anomalies(&bytes[..n]).is_err(), "anomalies cut at {n}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode_anomalies(&longer).is_err());
    }

    #[test]
    fn the_store_keeps_the_newest_scans_and_the_last_anomalies() {
        let dir = tempfile::tempdir().unwrap();
        let store = GraphStore::open(&dir.path().join("graph.redb")).unwrap();
        let interner = Interner::new();
        assert!(store.load_signal_history(&interner).unwrap().is_empty());
        assert!(store.load_last_anomalies().unwrap().is_none());
        let key = TypeKey {
            provider: interner.intern("gcp"),
            ty: interner.intern("compute:disk"),
        };
        for seq in 1..=7u64 {
            let mut t = ScanTotals {
                scan_seq: seq,
                at_us: seq * 10,
                types: Default::default(),
            };
            t.types.insert(
                key,
                TypeTotals {
                    count: seq,
                    cost_usd_mo: seq as f64,
                    waste_usd_mo: 0.0,
                },
            );
            let a = Anomalies {
                scan_seq: seq,
                ..sample_anomalies()
            };
            store.put_signal(&t, &a, &interner, 5).unwrap();
        }
        let seqs: Vec<u64> = store
            .load_signal_history(&interner)
            .unwrap()
            .iter()
            .map(|t| t.scan_seq)
            .collect();
        assert_eq!(seqs, [3, 4, 5, 6, 7]);
        assert_eq!(store.load_last_anomalies().unwrap().unwrap().scan_seq, 7);
    }
}

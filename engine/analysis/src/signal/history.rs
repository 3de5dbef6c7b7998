//! Per-type totals across the last scans, and the type anomalies they show.

use std::collections::{BTreeSet, VecDeque};

use super::robust::Robust;
use super::{
    HISTORY_SCANS, MIN_CHANGE_USD_MO, ScanTotals, TYPE_MIN_CHANGE_PCT, TYPE_MIN_CHANGES, TypeAnomaly, TypeKey,
    TypeTotals, Z_THRESHOLD,
};
use svc_graph::intern::Interner;

/// Points listed per type in a [`TypeSummary`].
pub const RECENT_POINTS: usize = 10;

/// The totals of the last [`HISTORY_SCANS`] scans, oldest first.
#[derive(Clone, Debug, Default)]
pub struct History {
    scans: VecDeque<ScanTotals>,
}

/// One type's history in brief.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeSummary {
    pub key: TypeKey,
    /// Scans recorded in the window (a type absent from a scan counts as 0 there).
    pub scans: u64,
    pub first_scan_seq: u64,
    pub last_scan_seq: u64,
    pub latest: TypeTotals,
    /// The scan before the latest, when there is one.
    pub previous: Option<TypeTotals>,
    pub min_cost_usd_mo: f64,
    pub max_cost_usd_mo: f64,
    pub mean_cost_usd_mo: f64,
    /// The last `RECENT_POINTS` scans, oldest first: `(scan_seq, totals)`.
    pub recent: Vec<(u64, TypeTotals)>,
}

impl History {
    /// From stored scans in any order; keeps the newest [`HISTORY_SCANS`].
    pub fn from_scans(mut scans: Vec<ScanTotals>) -> History {
        scans.sort_by_key(|s| s.scan_seq);
        let skip = scans.len().saturating_sub(HISTORY_SCANS);
        History {
            scans: scans.into_iter().skip(skip).collect(),
        }
    }

    /// Appends a scan, dropping the oldest beyond [`HISTORY_SCANS`].
    pub fn push(&mut self, totals: ScanTotals) {
        self.scans.push_back(totals);
        while self.scans.len() > HISTORY_SCANS {
            self.scans.pop_front();
        }
    }

    pub fn len(&self) -> usize {
        self.scans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.scans.is_empty()
    }

    /// Recorded scans, oldest first.
    pub fn scans(&self) -> impl Iterator<Item = &ScanTotals> {
        self.scans.iter()
    }

    fn keys<'a>(&'a self, extra: Option<&'a ScanTotals>) -> BTreeSet<TypeKey> {
        self.scans
            .iter()
            .chain(extra)
            .flat_map(|s| s.types.keys().copied())
            .collect()
    }

    /// `key`'s totals at every recorded scan (then `extra`), 0 where absent.
    fn series<'a>(
        &'a self,
        key: TypeKey,
        extra: Option<&'a ScanTotals>,
    ) -> impl Iterator<Item = (u64, TypeTotals)> + 'a {
        self.scans
            .iter()
            .chain(extra)
            .map(move |s| (s.scan_seq, s.types.get(&key).copied().unwrap_or_default()))
    }

    /// Types whose total cost change at `current` is an outlier among their
    /// changes over the history (with `current` appended), highest |z| first.
    pub fn type_anomalies(&self, current: &ScanTotals, interner: &Interner) -> Vec<TypeAnomaly> {
        let mut out = Vec::new();
        if self.scans.is_empty() {
            return out;
        }
        let reader = interner.reader();
        for key in self.keys(Some(current)) {
            let values: Vec<TypeTotals> = self.series(key, Some(current)).map(|(_, t)| t).collect();
            let changes: Vec<f64> = values.windows(2).map(|w| w[1].cost_usd_mo - w[0].cost_usd_mo).collect();
            let (Some(&change), Some(prev), Some(cur)) = (changes.last(), values.iter().rev().nth(1), values.last())
            else {
                continue;
            };
            if changes.len() < TYPE_MIN_CHANGES || !type_material(prev.cost_usd_mo, change) {
                continue;
            }
            let Some(r) = Robust::of(&changes) else { continue };
            let z = r.z(change);
            if z.abs() > Z_THRESHOLD {
                out.push(TypeAnomaly {
                    ty: reader.resolve(key.ty).to_owned(),
                    provider: reader.resolve(key.provider).to_owned(),
                    previous: prev.cost_usd_mo,
                    current: cur.cost_usd_mo,
                    previous_count: prev.count,
                    count: cur.count,
                    z,
                    history_changes: changes.len() as u64,
                });
            }
        }
        out.sort_by(|a, b| b.z.abs().total_cmp(&a.z.abs()).then_with(|| a.ty.cmp(&b.ty)));
        out
    }

    /// Every type's history in brief, by key.
    pub fn summaries(&self) -> Vec<TypeSummary> {
        let mut out = Vec::new();
        for key in self.keys(None) {
            let series: Vec<(u64, TypeTotals)> = self.series(key, None).collect();
            let (Some(first), Some(last)) = (series.first(), series.last()) else {
                continue;
            };
            let costs = series.iter().map(|(_, t)| t.cost_usd_mo);
            let min = costs.clone().fold(f64::INFINITY, f64::min);
            let max = costs.clone().fold(f64::NEG_INFINITY, f64::max);
            let mean = costs.sum::<f64>() / series.len() as f64;
            out.push(TypeSummary {
                key,
                scans: series.len() as u64,
                first_scan_seq: first.0,
                last_scan_seq: last.0,
                latest: last.1,
                previous: series.len().checked_sub(2).map(|i| series[i].1),
                min_cost_usd_mo: min,
                max_cost_usd_mo: max,
                mean_cost_usd_mo: mean,
                recent: series[series.len().saturating_sub(RECENT_POINTS)..].to_vec(),
            });
        }
        out
    }
}

/// A type's total change is material: at least [`MIN_CHANGE_USD_MO`] and
/// [`TYPE_MIN_CHANGE_PCT`] of the previous total (any change from nothing).
fn type_material(previous: f64, change: f64) -> bool {
    change.abs() >= MIN_CHANGE_USD_MO
        && (previous == 0.0 || change.abs() / previous.abs() * 100.0 >= TYPE_MIN_CHANGE_PCT)
}

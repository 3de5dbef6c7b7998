//! The history the store keeps. With a retention window, the commits that
//! serve only times before it go: the newest checkpoint at or before the
//! window's start is kept with every commit after it, and the older
//! checkpoints and deltas are removed in one write transaction. The kept
//! checkpoint's time is then the earliest time the store answers for
//! (`META_HISTORY_FROM`); a question about an earlier time is
//! [`StoreError::BeforeRetention`], never an empty or partial graph.
//!
//! A state at or after the kept checkpoint is replayed from the same
//! segments as before (the latest checkpoint at or before it, and the
//! deltas after that), so its answer does not change. Pages redb frees are
//! reused by later commits, so the file stops growing once the history it
//! keeps does.

use redb::{Durability, ReadTransaction, ReadableDatabase, ReadableTable};

use super::error::StoreError;
use super::store::{COMMITS, GraphStore, KIND_CHECKPOINT, META, SEGMENTS};

/// `meta` key: the earliest time the store answers for, in microseconds
/// (absent or 0: the whole history is kept).
const META_HISTORY_FROM: &str = "history_from_us";

/// What one prune of the history removed.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct HistoryPruned {
    /// Commits (checkpoints and deltas) removed.
    pub commits: u64,
    /// Segments removed with them.
    pub segments: u64,
    /// The earliest time the store answers for after the prune (0: every time).
    pub earliest_us: u64,
}

impl GraphStore {
    /// The earliest time the store answers questions about the past for,
    /// in microseconds; 0 while it keeps its whole history.
    pub fn history_start(&self) -> Result<u64, StoreError> {
        let err = self.db_err();
        let txn = self.database()?.begin_read().map_err(|e| err(e.into()))?;
        self.history_from(&txn)
    }

    fn history_from(&self, txn: &ReadTransaction) -> Result<u64, StoreError> {
        let err = self.db_err();
        let meta = match txn.open_table(META) {
            Ok(m) => m,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(0),
            Err(e) => return Err(err(e.into())),
        };
        Ok(meta
            .get(META_HISTORY_FROM)
            .map_err(|e| err(e.into()))?
            .map(|v| v.value())
            .unwrap_or(0))
    }

    /// [`StoreError::BeforeRetention`] when `ts_us` is before the history kept.
    pub(super) fn check_kept(&self, txn: &ReadTransaction, ts_us: u64) -> Result<(), StoreError> {
        let earliest_us = self.history_from(txn)?;
        if ts_us < earliest_us {
            return Err(StoreError::BeforeRetention {
                at_us: ts_us,
                earliest_us,
            });
        }
        Ok(())
    }

    /// [`GraphStore::check_kept`] in a transaction of its own.
    pub(super) fn check_time(&self, ts_us: u64) -> Result<(), StoreError> {
        let err = self.db_err();
        let txn = self.database()?.begin_read().map_err(|e| err(e.into()))?;
        self.check_kept(&txn, ts_us)
    }

    /// Drops the history that serves only times before `window_start_us`:
    /// every commit older than the newest checkpoint at or before it, with
    /// its segments, in one durable transaction. Nothing is removed when no
    /// checkpoint is that old, or nothing is older than it.
    pub fn prune_history(&self, window_start_us: u64) -> Result<HistoryPruned, StoreError> {
        let err = self.db_err();
        let txn = self.begin_write()?;
        let keep = {
            let commits = txn.open_table(COMMITS).map_err(|e| err(e.into()))?;
            let mut keep = None;
            for item in commits.range(..=window_start_us).map_err(|e| err(e.into()))?.rev() {
                let (k, v) = item.map_err(|e| err(e.into()))?;
                if v.value() == KIND_CHECKPOINT {
                    keep = Some(k.value());
                    break;
                }
            }
            let older = match keep {
                Some(c) => commits.range(..c).map_err(|e| err(e.into()))?.next().is_some(),
                None => false,
            };
            keep.filter(|_| older)
        };
        let Some(keep) = keep else {
            // Nothing to remove: the transaction is dropped unwritten.
            drop(txn);
            return Ok(HistoryPruned {
                earliest_us: self.history_start()?,
                ..HistoryPruned::default()
            });
        };
        let mut txn = txn;
        txn.set_durability(Durability::Immediate)
            .map_err(|e| err(redb::Error::from(e)))?;
        let mut out = HistoryPruned {
            earliest_us: keep,
            ..HistoryPruned::default()
        };
        {
            let mut commits = txn.open_table(COMMITS).map_err(|e| err(e.into()))?;
            commits
                .retain_in(..keep, |_, _| {
                    out.commits += 1;
                    false
                })
                .map_err(|e| err(e.into()))?;
            let mut segments = txn.open_table(SEGMENTS).map_err(|e| err(e.into()))?;
            segments
                .retain_in(..(keep, 0u8, 0u16), |_, _| {
                    out.segments += 1;
                    false
                })
                .map_err(|e| err(e.into()))?;
            let mut meta = txn.open_table(META).map_err(|e| err(e.into()))?;
            meta.insert(META_HISTORY_FROM, keep).map_err(|e| err(e.into()))?;
        }
        txn.commit()?;
        tracing::info!(
            commits = out.commits,
            segments = out.segments,
            earliest_us = keep,
            "graph history before the retention window dropped"
        );
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use svc_graph::graph::Graph;
    use svc_graph::intern::Interner;

    use super::super::tests::scan;
    use super::*;

    /// Commits at 100, 200, .. of about 300 volumes, a third of them
    /// changing state at every commit: a checkpoint every dozen or so.
    fn many_commits(store: &GraphStore, count: u64) -> Graph {
        let mut g = Graph::new(Arc::new(Interner::new()));
        for i in 1..=count {
            let state = if i % 2 == 0 { "stopped" } else { "available" };
            scan(store, &mut g, i * 100, i, 300 - (i as usize % 7) * 10, state);
        }
        g
    }

    fn checkpoints(store: &GraphStore) -> Vec<u64> {
        let txn = store.database().unwrap().begin_read().unwrap();
        let commits = txn.open_table(COMMITS).unwrap();
        commits
            .iter()
            .unwrap()
            .map(|i| i.unwrap())
            .filter(|(_, v)| v.value() == KIND_CHECKPOINT)
            .map(|(k, _)| k.value())
            .collect()
    }

    #[test]
    fn a_prune_keeps_the_answers_from_the_window_on_and_refuses_earlier_times() {
        let dir = tempfile::tempdir().unwrap();
        let store = GraphStore::open(&dir.path().join("graph.redb")).unwrap();
        let _g = many_commits(&store, 80);
        let cps = checkpoints(&store);
        assert!(cps.len() >= 4, "checkpoints at {cps:?}");
        let before = store.stats().unwrap();
        assert_eq!(store.history_start().unwrap(), 0, "the whole history is kept");

        // A window starting between two checkpoints keeps the older one.
        let window = cps[2] + 50;
        let times: Vec<u64> = (cps[2]..=8100).step_by(50).collect();
        let answers: Vec<_> = times.iter().map(|&t| store.graph_at(t).unwrap()).collect();
        let diff = store.diff(cps[2], 7950).unwrap();
        let versions = store
            .node_versions("crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-3", 1000)
            .unwrap();

        let pruned = store.prune_history(window).unwrap();
        assert_eq!(pruned.earliest_us, cps[2]);
        let after = store.stats().unwrap();
        let removed_commits = (cps[2] / 100 - 1) as u64;
        assert_eq!(pruned.commits, removed_commits);
        assert_eq!(after.commits, before.commits - removed_commits);
        assert_eq!(after.checkpoints, before.checkpoints - 2);
        assert_eq!(after.segments, before.segments - pruned.segments);
        assert!(pruned.segments > 0);
        assert_eq!(store.history_start().unwrap(), cps[2]);

        for (t, want) in times.iter().zip(&answers) {
            let got = store.graph_at(*t).unwrap();
            assert!(got.nodes == want.nodes, "at {t}: other nodes");
            let sorted = |mut e: Vec<svc_graph::graph::EdgeVersion>| {
                e.sort_by(super::super::edge_order);
                e
            };
            assert!(sorted(got.edges) == sorted(want.edges.clone()), "at {t}: other edges");
        }
        let again = store.diff(cps[2], 7950).unwrap();
        assert!(again.added == diff.added && again.removed == diff.removed && again.changed == diff.changed);
        assert!(!diff.changed.is_empty());
        // A node's versions before the window went with their commits.
        let kept = store
            .node_versions("crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-3", 1000)
            .unwrap();
        assert!(kept.total < versions.total, "{} of {}", kept.total, versions.total);
        assert!(kept.versions[..] == versions.versions[..kept.versions.len()]);

        for t in [0, 50, cps[1], cps[2] - 1] {
            match store.graph_at(t) {
                Err(StoreError::BeforeRetention { at_us, earliest_us }) => {
                    assert_eq!((at_us, earliest_us), (t, cps[2]));
                }
                other => panic!("at {t}: {other:?}"),
            }
            assert!(matches!(store.diff(t, 3000), Err(StoreError::BeforeRetention { .. })));
        }
        let e = store.graph_at(10).unwrap_err().to_string();
        assert!(e.contains(&cps[2].to_string()), "{e}");

        // A restart loads the same latest state.
        let loaded = store.load().unwrap();
        assert_eq!(loaded.nodes.len(), store.replayed(u64::MAX).unwrap().nodes().len());
        // Pruning again at the same window removes nothing.
        let twice = store.prune_history(window).unwrap();
        assert_eq!((twice.commits, twice.segments, twice.earliest_us), (0, 0, cps[2]));
    }

    #[test]
    fn nothing_goes_without_a_checkpoint_before_the_window() {
        let dir = tempfile::tempdir().unwrap();
        let store = GraphStore::open(&dir.path().join("graph.redb")).unwrap();
        let _g = many_commits(&store, 10);
        let cps = checkpoints(&store);
        let before = store.stats().unwrap();
        for window in [0, 50, cps[0]] {
            let p = store.prune_history(window).unwrap();
            assert_eq!(p, HistoryPruned::default(), "window {window}");
        }
        assert_eq!(store.stats().unwrap(), before);
        assert!(
            store.graph_at(50).unwrap().nodes.is_empty(),
            "before the first commit: empty"
        );
    }

    /// With a checkpoint due once the last is a window old, a graph that
    /// hardly changes still has one to keep: the history kept is at most
    /// two windows long.
    #[test]
    fn a_checkpoint_a_window_keeps_at_most_two_windows() {
        let dir = tempfile::tempdir().unwrap();
        let store = GraphStore::open(&dir.path().join("graph.redb")).unwrap();
        store.set_max_checkpoint_age(Some(300));
        let mut g = Graph::new(Arc::new(Interner::new()));
        for i in 1..=40u64 {
            // One volume in twelve changes now and then: far below the
            // rows a checkpoint waits for otherwise.
            let state = if i % 5 == 0 { "stopped" } else { "available" };
            scan(&store, &mut g, i * 100, i, 36, state);
            let p = store.prune_history((i * 100).saturating_sub(300)).unwrap();
            if i > 6 {
                assert!(p.earliest_us >= i * 100 - 600, "at {}: {p:?}", i * 100);
            }
            let kept = store.stats().unwrap().commits;
            assert!(kept <= 7, "at {}: {kept} commits kept", i * 100);
        }
        let cps = checkpoints(&store);
        assert!(cps.windows(2).all(|w| w[1] - w[0] <= 300), "{cps:?}");
        assert!(store.graph_at(4000 - 300).is_ok());
        assert!(matches!(store.graph_at(100), Err(StoreError::BeforeRetention { .. })));
    }

    /// The file stops growing once the history it keeps does: the pages of
    /// pruned commits are reused by later ones.
    #[test]
    fn the_file_reaches_a_steady_size_when_old_history_goes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("graph.redb");
        let store = GraphStore::open(&path).unwrap();
        let mut g = Graph::new(Arc::new(Interner::new()));
        let mut sizes = Vec::new();
        for i in 1..=120u64 {
            let state = if i % 2 == 0 { "stopped" } else { "available" };
            scan(&store, &mut g, i * 100, i, 3000, state);
            store.prune_history((i * 100).saturating_sub(1000)).unwrap();
            sizes.push(std::fs::metadata(&path).unwrap().len());
        }
        let at_60 = sizes[59];
        let last = *sizes.last().unwrap();
        let max_late = sizes[60..].iter().max().copied().unwrap();
        assert!(
            max_late <= at_60 + at_60 / 4,
            "the file grew from {at_60} to {max_late} bytes over the last 60 commits: {sizes:?}"
        );
        // At most a checkpoint's worth of deltas (CHECKPOINT_FACTOR times
        // the graph's rows) before the window's ten commits.
        assert!(store.stats().unwrap().commits <= 40, "{:?}", store.stats().unwrap());
        assert!(last > 0);
    }
}

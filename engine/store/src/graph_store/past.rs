//! Questions about the past: the graph as it was at a time, a page of it,
//! and what changed between two times.
//!
//! Each answer starts from a whole state replayed from the segments,
//! shared with the other questions about the same commit and replayed one
//! at a time (`graph_store/replays.rs`).

use std::cmp::Ordering;
use std::sync::Arc;

use redb::ReadableDatabase;
use rustc_hash::FxHashMap;
use svc_graph::graph::{EdgeVersion, NodeVersion};
use svc_graph::relation::Relation;

use super::error::StoreError;
use super::replays::{GraphAt, Replayed};
use super::store::{COMMITS, GraphStore};

/// What changed between two times.
#[derive(Debug, Default)]
pub struct GraphDiff {
    pub added: Vec<NodeVersion>,
    pub removed: Vec<NodeVersion>,
    /// `(before, after)`.
    pub changed: Vec<(NodeVersion, NodeVersion)>,
    pub edges_added: Vec<EdgeVersion>,
    pub edges_removed: Vec<EdgeVersion>,
    /// `(before, after)`.
    pub edges_changed: Vec<(EdgeVersion, EdgeVersion)>,
}

fn live_at(valid_from: u64, valid_to: u64, ts: u64) -> bool {
    valid_from <= ts && (valid_to == 0 || valid_to > ts)
}

/// One page of the graph as it was at a time.
#[derive(Debug, Default)]
pub struct GraphAtPage {
    /// Up to the page's size of nodes live then, after the cursor, by CRN.
    pub nodes: Vec<NodeVersion>,
    /// The edges live then whose source is one of the page's nodes; the
    /// last page also has those whose source was not live then.
    pub edges: Vec<EdgeVersion>,
    /// The CRN of the page's last node when more pages follow.
    pub next: Option<String>,
    /// Nodes and edges live then, in the whole graph.
    pub total_nodes: u64,
    pub total_edges: u64,
}

/// How many entries each list of a diff has, also beyond a limit.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct DiffCounts {
    pub added: u64,
    pub removed: u64,
    pub changed: u64,
    pub edges_added: u64,
    pub edges_removed: u64,
    pub edges_changed: u64,
}

impl DiffCounts {
    /// The longest list's length.
    pub fn longest(&self) -> u64 {
        [
            self.added,
            self.removed,
            self.changed,
            self.edges_added,
            self.edges_removed,
            self.edges_changed,
        ]
        .into_iter()
        .max()
        .unwrap_or(0)
    }
}

/// The order of edges in answers: source, target, relation name.
pub fn edge_order(a: &EdgeVersion, b: &EdgeVersion) -> Ordering {
    (&a.src, &a.dst, a.relation.name()).cmp(&(&b.src, &b.dst, b.relation.name()))
}

/// The first `limit` of `list` in [`edge_order`], cloned.
fn first_edges(mut list: Vec<&EdgeVersion>, limit: usize) -> Vec<EdgeVersion> {
    if list.len() > limit {
        list.select_nth_unstable_by(limit, |a, b| edge_order(a, b));
        list.truncate(limit);
    }
    list.sort_unstable_by(|a, b| edge_order(a, b));
    list.into_iter().cloned().collect()
}

/// The first `limit` pairs of `list` in [`edge_order`] of the later edge, cloned.
fn first_edge_pairs(mut list: Vec<(&EdgeVersion, &EdgeVersion)>, limit: usize) -> Vec<(EdgeVersion, EdgeVersion)> {
    if list.len() > limit {
        list.select_nth_unstable_by(limit, |a, b| edge_order(a.1, b.1));
        list.truncate(limit);
    }
    list.sort_unstable_by(|a, b| edge_order(a.1, b.1));
    list.into_iter().map(|(b, a)| (b.clone(), a.clone())).collect()
}

impl GraphStore {
    /// The last commit at or before `ts_us`: the states as of two times
    /// with the same last commit are the same.
    fn last_commit_at(&self, ts_us: u64) -> Result<Option<u64>, StoreError> {
        let err = self.db_err();
        let txn = self.database()?.begin_read().map_err(|e| err(e.into()))?;
        let commits = txn.open_table(COMMITS).map_err(|e| err(e.into()))?;
        let last = commits
            .range(..=ts_us)
            .map_err(|e| err(e.into()))?
            .next_back()
            .transpose()
            .map_err(|e| err(e.into()))?;
        Ok(last.map(|(k, _)| k.value()))
    }

    /// Every row as of `ts_us` (the latest version of each written at or
    /// before it, live or not): shared with the other questions about the
    /// same commit, replayed otherwise, one replay at a time.
    /// A time before the history kept is [`StoreError::BeforeRetention`].
    pub fn replayed(&self, ts_us: u64) -> Result<Arc<Replayed>, StoreError> {
        self.check_time(ts_us)?;
        let key = self.last_commit_at(ts_us)?;
        self.replays.get(key, || match key {
            Some(commit) => self.state_as_of(commit),
            None => Ok(GraphAt::default()),
        })
    }

    /// The graph as it was at `ts_us`: the versions live then, cloned (the
    /// whole graph; a server answers with [`GraphStore::graph_at_page`]).
    pub fn graph_at(&self, ts_us: u64) -> Result<GraphAt, StoreError> {
        let state = self.replayed(ts_us)?;
        Ok(GraphAt {
            nodes: state
                .nodes()
                .iter()
                .filter(|n| live_at(n.row.valid_from, n.row.valid_to, ts_us))
                .cloned()
                .collect(),
            edges: state
                .edges()
                .iter()
                .filter(|e| live_at(e.valid_from, e.valid_to, ts_us))
                .cloned()
                .collect(),
        })
    }

    /// One page of the graph as it was at `ts_us`: the first `limit` nodes
    /// live then whose CRN sorts after `after`, and their edges. Following
    /// [`GraphAtPage::next`] lists every live node and edge once.
    pub fn graph_at_page(&self, ts_us: u64, after: Option<&str>, limit: usize) -> Result<GraphAtPage, StoreError> {
        let state = self.replayed(ts_us)?;
        let live_node = |n: &&NodeVersion| live_at(n.row.valid_from, n.row.valid_to, ts_us);
        let nodes = state.nodes();
        let total_nodes = nodes.iter().filter(live_node).count() as u64;
        let start = after.map_or(0, |c| nodes.partition_point(|n| n.crn.as_str() <= c));
        let mut rest = nodes[start..].iter().filter(live_node);
        let page: Vec<NodeVersion> = rest.by_ref().take(limit).cloned().collect();
        let more = rest.next().is_some();
        let upper = if more {
            page.last().map(|n| n.crn.as_str())
        } else {
            None
        };
        let mut total_edges = 0u64;
        let mut edges = Vec::new();
        for e in state.edges() {
            if !live_at(e.valid_from, e.valid_to, ts_us) {
                continue;
            }
            total_edges += 1;
            if after.is_none_or(|c| e.src.as_str() > c) && upper.is_none_or(|u| e.src.as_str() <= u) {
                edges.push(e.clone());
            }
        }
        let next = upper.map(str::to_owned);
        Ok(GraphAtPage {
            nodes: page,
            edges,
            next,
            total_nodes,
            total_edges,
        })
    }

    /// Added, removed and changed nodes and edges between `from_us` and
    /// `to_us`, every one of them.
    pub fn diff(&self, from_us: u64, to_us: u64) -> Result<GraphDiff, StoreError> {
        self.diff_limited(from_us, to_us, usize::MAX).map(|(d, _)| d)
    }

    /// [`GraphStore::diff`], each list cut at `limit` entries, with the
    /// counts of the whole lists. Nodes come in CRN order, edges in
    /// [`edge_order`] (of the later version, for changed edges).
    pub fn diff_limited(&self, from_us: u64, to_us: u64, limit: usize) -> Result<(GraphDiff, DiffCounts), StoreError> {
        let before = self.replayed(from_us)?;
        let after = self.replayed(to_us)?;
        let mut out = GraphDiff::default();
        let mut counts = DiffCounts::default();
        // Both sides are sorted by CRN: walk them together.
        let mut old = before
            .nodes()
            .iter()
            .filter(|n| live_at(n.row.valid_from, n.row.valid_to, from_us))
            .peekable();
        let mut new = after
            .nodes()
            .iter()
            .filter(|n| live_at(n.row.valid_from, n.row.valid_to, to_us))
            .peekable();
        loop {
            let side = match (old.peek(), new.peek()) {
                (None, None) => break,
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (Some(o), Some(n)) => o.crn.cmp(&n.crn),
            };
            match side {
                Ordering::Less => {
                    let Some(o) = old.next() else { break };
                    counts.removed += 1;
                    if out.removed.len() < limit {
                        out.removed.push(o.clone());
                    }
                }
                Ordering::Greater => {
                    let Some(n) = new.next() else { break };
                    counts.added += 1;
                    if out.added.len() < limit {
                        out.added.push(n.clone());
                    }
                }
                Ordering::Equal => {
                    let (Some(o), Some(n)) = (old.next(), new.next()) else {
                        break;
                    };
                    if o.row != n.row {
                        counts.changed += 1;
                        if out.changed.len() < limit {
                            out.changed.push((o.clone(), n.clone()));
                        }
                    }
                }
            }
        }
        type EdgeKey<'a> = (&'a str, Relation, &'a str);
        fn key(e: &EdgeVersion) -> EdgeKey<'_> {
            (e.src.as_str(), e.relation, e.dst.as_str())
        }
        let mut old: FxHashMap<EdgeKey<'_>, &EdgeVersion> = before
            .edges()
            .iter()
            .filter(|e| live_at(e.valid_from, e.valid_to, from_us))
            .map(|e| (key(e), e))
            .collect();
        let (mut added, mut changed) = (Vec::new(), Vec::new());
        for e in after
            .edges()
            .iter()
            .filter(|e| live_at(e.valid_from, e.valid_to, to_us))
        {
            match old.remove(&key(e)) {
                None => added.push(e),
                Some(o) if o != e => changed.push((o, e)),
                Some(_) => {}
            }
        }
        let removed: Vec<&EdgeVersion> = old.into_values().collect();
        counts.edges_added = added.len() as u64;
        counts.edges_removed = removed.len() as u64;
        counts.edges_changed = changed.len() as u64;
        out.edges_added = first_edges(added, limit);
        out.edges_removed = first_edges(removed, limit);
        out.edges_changed = first_edge_pairs(changed, limit);
        Ok((out, counts))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use svc_graph::graph::Graph;
    use svc_graph::intern::Interner;

    use super::super::tests::scan;
    use super::*;

    /// A store with three commits of `vol-0..3000` at 100 (a third
    /// `available`), 200 (that third `stopped`) and 300 (`vol-2700..` gone),
    /// each volume attached to the one at half its number.
    fn three_commits(dir: &std::path::Path) -> (GraphStore, Graph) {
        let store = GraphStore::open(&dir.join("graph.redb")).unwrap();
        let mut g = Graph::new(Arc::new(Interner::new()));
        scan(&store, &mut g, 100, 1, 3000, "available");
        scan(&store, &mut g, 200, 2, 3000, "stopped");
        scan(&store, &mut g, 300, 3, 2700, "stopped");
        (store, g)
    }

    #[test]
    fn questions_ending_at_one_commit_share_its_replay_while_it_is_held() {
        let dir = tempfile::tempdir().unwrap();
        let (store, mut g) = three_commits(dir.path());
        let a = store.replayed(250).unwrap();
        let b = store.replayed(299).unwrap();
        assert!(Arc::ptr_eq(&a, &b), "250 and 299 both end at the commit of 200");
        let c = store.replayed(300).unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(
            (a.nodes().len(), c.nodes().len()),
            (3000, 3000),
            "every row, live or not"
        );
        // Nothing keeps a state its readers have let go of.
        let gone = Arc::downgrade(&a);
        drop((a, b));
        assert!(gone.upgrade().is_none());
        // A commit written since is seen by the next question about a
        // time after it.
        scan(&store, &mut g, 400, 4, 2000, "stopped");
        let d = store.replayed(u64::MAX).unwrap();
        assert!(!Arc::ptr_eq(&c, &d));
        let live = d.nodes().iter().filter(|n| n.row.valid_to == 0).count();
        assert_eq!(live, 2000);
    }

    #[test]
    fn pages_of_the_graph_at_a_time_list_every_live_node_and_edge_once() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _g) = three_commits(dir.path());
        for ts in [50, 150, 250, 350] {
            let whole = store.graph_at(ts).unwrap();
            let (mut nodes, mut edges, mut after) = (Vec::new(), Vec::new(), None::<String>);
            loop {
                let page = store.graph_at_page(ts, after.as_deref(), 700).unwrap();
                assert_eq!(page.total_nodes as usize, whole.nodes.len());
                assert_eq!(page.total_edges as usize, whole.edges.len());
                assert!(page.nodes.len() <= 700);
                nodes.extend(page.nodes);
                edges.extend(page.edges);
                match page.next {
                    Some(next) => after = Some(next),
                    None => break,
                }
            }
            assert_eq!(nodes, whole.nodes, "at {ts}: the pages, in order, are the graph");
            let mut whole_edges = whole.edges;
            whole_edges.sort_by(edge_order);
            edges.sort_by(edge_order);
            assert_eq!(edges, whole_edges, "at {ts}");
        }
    }

    #[test]
    fn a_limited_diff_is_the_head_of_the_whole_one_with_its_counts() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _g) = three_commits(dir.path());
        for (from, to) in [(150, 350), (50, 250), (250, 150), (350, 350)] {
            // What changed, worked out from the two graphs by CRN and edge key.
            let (before, after) = (store.graph_at(from).unwrap(), store.graph_at(to).unwrap());
            let by_crn = |nodes: Vec<NodeVersion>| -> BTreeMap<String, NodeVersion> {
                nodes.into_iter().map(|n| (n.crn.clone(), n)).collect()
            };
            let (old, new) = (by_crn(before.nodes), by_crn(after.nodes));
            let added: Vec<&String> = new.keys().filter(|k| !old.contains_key(*k)).collect();
            let removed: Vec<&String> = old.keys().filter(|k| !new.contains_key(*k)).collect();
            let changed: Vec<&String> = new
                .iter()
                .filter(|(k, n)| old.get(*k).is_some_and(|o| o.row != n.row))
                .map(|(k, _)| k)
                .collect();
            let edge_key = |e: &EdgeVersion| (e.src.clone(), e.relation, e.dst.clone());
            let old_edges: BTreeMap<_, _> = before.edges.iter().map(|e| (edge_key(e), e)).collect();
            let new_edges: BTreeMap<_, _> = after.edges.iter().map(|e| (edge_key(e), e)).collect();
            let edges_added = new_edges.keys().filter(|k| !old_edges.contains_key(*k)).count();
            let edges_removed = old_edges.keys().filter(|k| !new_edges.contains_key(*k)).count();

            let whole = store.diff(from, to).unwrap();
            let crns = |list: &[NodeVersion]| list.iter().map(|n| n.crn.clone()).collect::<Vec<_>>();
            let owned = |list: Vec<&String>| list.into_iter().cloned().collect::<Vec<_>>();
            assert_eq!(crns(&whole.added), owned(added), "{from}..{to}");
            assert_eq!(crns(&whole.removed), owned(removed));
            let whole_changed: Vec<String> = whole.changed.iter().map(|(_, a)| a.crn.clone()).collect();
            assert_eq!(whole_changed, owned(changed));
            assert_eq!(whole.edges_added.len(), edges_added);
            assert_eq!(whole.edges_removed.len(), edges_removed);
            assert!(whole.edges_added.is_sorted_by(|a, b| edge_order(a, b).is_le()));
            assert!(whole.edges_removed.is_sorted_by(|a, b| edge_order(a, b).is_le()));

            for limit in [0, 1, 5, 400] {
                let (cut, counts) = store.diff_limited(from, to, limit).unwrap();
                let n = |list_len: usize| list_len as u64;
                assert_eq!(
                    counts,
                    DiffCounts {
                        added: n(whole.added.len()),
                        removed: n(whole.removed.len()),
                        changed: n(whole.changed.len()),
                        edges_added: n(whole.edges_added.len()),
                        edges_removed: n(whole.edges_removed.len()),
                        edges_changed: n(whole.edges_changed.len()),
                    }
                );
                let head = |len: usize| len.min(limit);
                assert_eq!(cut.added[..], whole.added[..head(whole.added.len())]);
                assert_eq!(cut.removed[..], whole.removed[..head(whole.removed.len())]);
                assert_eq!(cut.changed[..], whole.changed[..head(whole.changed.len())]);
                assert_eq!(cut.edges_added[..], whole.edges_added[..head(whole.edges_added.len())]);
                assert_eq!(
                    cut.edges_removed[..],
                    whole.edges_removed[..head(whole.edges_removed.len())]
                );
                assert_eq!(
                    cut.edges_changed[..],
                    whole.edges_changed[..head(whole.edges_changed.len())]
                );
            }
        }
        let (d, counts) = store.diff_limited(150, 350, 10).unwrap();
        assert_eq!(
            (counts.removed, counts.changed),
            (300, 900),
            "vol-2700.. gone; 900 of the rest stopped"
        );
        assert_eq!(counts.longest(), 900);
        assert_eq!(d.changed.len(), 10);
    }
}

//! The temporal graph store: versions, time travel, diffs, restarts, corruption.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

use std::sync::Arc;

use svc_engine::graph::{NodeBatch, NodeInput, NodeKeyRef};
use svc_engine::store::{CommitMeta, GraphStore};
use svc_engine::{Crn, Graph, Interner};

fn push(batch: &mut NodeBatch, i: &Interner, crn: &str, state: &str, cost: f32) {
    let c = Crn::parse(crn).unwrap();
    let key = NodeKeyRef::intern(i, &c);
    let ty = i.intern(&c.node_type());
    let st = i.intern(state);
    let k = i.intern("size_gib");
    batch.push(
        NodeInput {
            key,
            ty,
            state: st,
            cost_usd_mo: cost,
            creation_ts: 1,
        },
        &[],
        |w| w.int(k, 10),
    );
}

const A: &str = "crn:svc:aws:us-east-1:ec2:volume:1:vol-a";
const B: &str = "crn:svc:aws:us-east-1:ec2:instance:1:i-b";
const C: &str = "crn:svc:aws:us-east-1:ec2:instance:1:i-c";

/// Three scans: {A, B} at 100; B changes and C appears at 200; A disappears at 300.
fn three_scans(store: &GraphStore, g: &mut Graph, i: &Arc<Interner>) {
    let mut persisted = 0;
    type Scan<'a> = (u64, Vec<(&'a str, &'a str, f32)>);
    let scans: [Scan; 3] = [
        (100, vec![(A, "available", 10.0), (B, "running", 70.0)]),
        (
            200,
            vec![(A, "available", 10.0), (B, "stopped", 70.0), (C, "running", 30.0)],
        ),
        (300, vec![(B, "stopped", 70.0), (C, "running", 30.0)]),
    ];
    for (seq, (now, nodes)) in scans.into_iter().enumerate() {
        let mut b = NodeBatch::default();
        for (crn, state, cost) in nodes {
            push(&mut b, i, crn, state, cost);
        }
        g.ingest_nodes(&[b], now, seq as u32 + 1);
        g.retire_unseen(&[i.intern("aws")], now, seq as u32 + 1);
        let changes = g.take_changes();
        let fresh = i.strings_from(persisted);
        let meta = CommitMeta {
            generation: g.generation(),
            scan_seq: seq as u64 + 1,
            commit_us: now,
            rows: (g.node_rows() + g.edge_rows()) as u64,
            observed_s: 0,
        };
        store
            .commit(persisted, &fresh, &changes, || g.all_versions(), meta)
            .unwrap();
        persisted += fresh.len();
    }
}

fn crns_at(store: &GraphStore, ts: u64) -> Vec<(String, String)> {
    let i = Interner::from_strings(store.load().unwrap().symbols).unwrap();
    let mut v: Vec<(String, String)> = store
        .graph_at(ts)
        .unwrap()
        .nodes
        .into_iter()
        .map(|n| (n.crn, i.resolve(n.row.state).to_string()))
        .collect();
    v.sort();
    v
}

#[test]
fn graph_at_answers_past_states() {
    let dir = tempfile::tempdir().unwrap();
    let store = GraphStore::open(&dir.path().join("graph.redb")).unwrap();
    let i = Arc::new(Interner::new());
    let mut g = Graph::new(i.clone());
    three_scans(&store, &mut g, &i);
    assert_eq!(crns_at(&store, 50), vec![]);
    assert_eq!(
        crns_at(&store, 100),
        vec![(B.into(), "running".into()), (A.into(), "available".into())]
    );
    assert_eq!(crns_at(&store, 199), crns_at(&store, 100));
    assert_eq!(
        crns_at(&store, 250),
        vec![
            (B.into(), "stopped".into()),
            (C.into(), "running".into()),
            (A.into(), "available".into())
        ]
    );
    assert_eq!(
        crns_at(&store, 300),
        vec![(B.into(), "stopped".into()), (C.into(), "running".into())]
    );
    let st = store.stats().unwrap();
    assert_eq!((st.commits, st.checkpoints), (3, 1), "a checkpoint, then two deltas");
    assert_eq!(st.delta_rows, 3, "B' and C, then A deleted");
}

#[test]
fn diff_lists_added_removed_changed() {
    let dir = tempfile::tempdir().unwrap();
    let store = GraphStore::open(&dir.path().join("graph.redb")).unwrap();
    let i = Arc::new(Interner::new());
    let mut g = Graph::new(i.clone());
    three_scans(&store, &mut g, &i);
    let d = store.diff(150, 350).unwrap();
    // B changed at 200 and A was deleted at 300: A is removed, C added, B changed.
    let names = |v: &[svc_engine::graph::NodeVersion]| v.iter().map(|n| n.crn.clone()).collect::<Vec<_>>();
    assert_eq!(names(&d.added), vec![C.to_string()]);
    assert_eq!(names(&d.removed), vec![A.to_string()]);
    assert_eq!(d.changed.len(), 1);
    assert_eq!(d.changed[0].0.crn, B);
    assert_ne!(d.changed[0].0.row.state, d.changed[0].1.row.state);
    let none = store.diff(300, 400).unwrap();
    assert!(none.added.is_empty() && none.removed.is_empty() && none.changed.is_empty());
}

#[test]
fn reopening_loads_the_latest_state_with_stable_symbols() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("graph.redb");
    let i = Arc::new(Interner::new());
    let mut g = Graph::new(i.clone());
    {
        let store = GraphStore::open(&path).unwrap();
        three_scans(&store, &mut g, &i);
    }
    let store = GraphStore::open(&path).unwrap();
    let loaded = store.load().unwrap();
    assert_eq!(loaded.meta.scan_seq, 3);
    assert_eq!(loaded.meta.commit_us, 300);
    let i2 = Arc::new(Interner::from_strings(&loaded.symbols).unwrap());
    assert_eq!(i2.get("stopped"), i.get("stopped"));
    let mut h = Graph::new(i2.clone());
    for row in &loaded.nodes {
        h.load_node(row);
    }
    h.rebuild_adjacency(300);
    assert_eq!(h.stats(300), g.stats(300));
    let b = h.node(h.find(&Crn::parse(B).unwrap()).unwrap()).unwrap();
    assert_eq!(&*i2.resolve(b.state()), "stopped");
    assert_eq!(b.valid_from(), 200);
    let a = h.node(h.find(&Crn::parse(A).unwrap()).unwrap()).unwrap();
    assert_eq!(a.valid_to(), 300, "logically deleted rows come back as deleted");
}

#[test]
fn corrupt_or_truncated_files_are_reported_with_their_path() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.redb");
    std::fs::write(&garbage, vec![0x5au8; 64 * 1024]).unwrap();
    let err = GraphStore::open(&garbage)
        .err()
        .expect("garbage must not open")
        .to_string();
    assert!(err.contains(&garbage.display().to_string()), "{err}");
    assert_eq!(
        std::fs::read(&garbage).unwrap(),
        vec![0x5au8; 64 * 1024],
        "never replaced"
    );

    let real = dir.path().join("graph.redb");
    {
        let store = GraphStore::open(&real).unwrap();
        let i = Arc::new(Interner::new());
        let mut g = Graph::new(i.clone());
        three_scans(&store, &mut g, &i);
    }
    let len = std::fs::metadata(&real).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&real).unwrap();
    f.set_len(len / 2).unwrap();
    drop(f);
    match GraphStore::open(&real) {
        Err(e) => assert!(e.to_string().contains(&real.display().to_string()), "{e}"),
        // redb may recover a truncated tail; then loading must still not panic.
        Ok(store) => {
            let _ = store.load();
        }
    }
}

#[test]
fn checkpoints_bound_replay_and_keep_answers() {
    let dir = tempfile::tempdir().unwrap();
    let store = GraphStore::open(&dir.path().join("graph.redb")).unwrap();
    let i = Arc::new(Interner::new());
    let mut g = Graph::new(i.clone());
    let mut persisted = 0;
    // Flip one node's state every commit: deltas pile up until a checkpoint is due.
    let commits = 2 + 2 * svc_engine::store::CHECKPOINT_FACTOR * 3;
    for k in 0..commits {
        let mut b = NodeBatch::default();
        push(&mut b, &i, A, if k % 2 == 0 { "available" } else { "in-use" }, 1.0);
        push(&mut b, &i, B, "running", 1.0);
        g.ingest_nodes(&[b], 1000 * (k + 1), k as u32 + 1);
        let changes = g.take_changes();
        let fresh = i.strings_from(persisted);
        let meta = CommitMeta {
            generation: g.generation(),
            scan_seq: k + 1,
            commit_us: 1000 * (k + 1),
            rows: (g.node_rows() + g.edge_rows()) as u64,
            observed_s: 0,
        };
        store
            .commit(persisted, &fresh, &changes, || g.all_versions(), meta)
            .unwrap();
        persisted += fresh.len();
    }
    let st = store.stats().unwrap();
    assert!(st.checkpoints >= 2, "{st:?}");
    assert!(st.delta_rows <= svc_engine::store::CHECKPOINT_FACTOR * 2, "{st:?}");
    for k in 0..commits {
        let want = if k % 2 == 0 { "available" } else { "in-use" };
        let at = crns_at(&store, 1000 * (k + 1) + 500);
        assert_eq!(
            at.iter().find(|(c, _)| c == A).map(|(_, s)| s.as_str()),
            Some(want),
            "at commit {k}"
        );
    }
}

//! The graph store's tests: segments built in parallel, commits and their
//! cache, stores written before compression, damaged segments, versions
//! read from the graph. [`scan`] commits a test estate for the other tests.

use std::sync::Arc;

use redb::{ReadableDatabase, ReadableTable};
use svc_graph::fixture::Estate;
use svc_graph::graph::Graph;
use svc_graph::ids::NodeId;
use svc_graph::intern::Interner;
use svc_graph::relation::Relation;

use super::segments::{
    FNV_START, PIECE_BYTES, SEGMENT_SHARDS, compress, decompress, fnv, fnv_all, piece_of, pieces, records,
    segment_shard, shard_of, write_record,
};
use super::store::{COMMITS, PART_EDGES_LZ4, PART_NODES, PART_NODES_LZ4, SEGMENTS};
use super::*;
use crate::codec::{edge_key, encode_edge_value, encode_node, encoded_edge_value_len, encoded_node_len};

/// Four hashes side by side equal each worked out alone (whatever the
/// lengths), and a hash carries on from its key's first part.
#[test]
fn hashes_four_at_a_time_equal_one_at_a_time() {
    let texts: Vec<Vec<u8>> = (0..11)
        .map(|n| (0..n * 7 % 23).map(|b| b as u8 ^ 0x5a).collect())
        .collect();
    let mut jobs: Vec<(u64, &[u8])> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| (FNV_START ^ i as u64, &t[..]))
        .collect();
    let expected: Vec<u64> = jobs.iter().map(|(h, t)| fnv(*h, t)).collect();
    fnv_all(&mut jobs);
    assert_eq!(jobs.iter().map(|(h, _)| *h).collect::<Vec<_>>(), expected);
    assert_eq!(
        segment_shard(b"crn:svc:aws"),
        shard_of(fnv(fnv(FNV_START, b"crn:"), b"svc:aws"))
    );
}

/// The segments built in parallel hold exactly the records a single
/// pass in item order writes: same shards, same order, same bytes.
#[test]
fn segments_built_in_parallel_equal_one_pass_in_item_order() {
    let interner = Arc::new(Interner::new());
    let mut e = Estate::new(interner.clone());
    let crn = |n: usize| format!("crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-{n}");
    for n in 0..20_000 {
        e.node(&crn(n), if n % 3 == 0 { "available" } else { "in-use" }, n as f32);
    }
    for n in 1..20_000 {
        e.edge(&crn(n), &crn(n / 2), Relation::AttachedTo);
    }
    let mut g = Graph::new(interner);
    e.scan_into(&mut g, 1, 1);
    let all = g.all_versions();
    assert_eq!((all.nodes.len(), all.edges.len()), (20_000, 19_999));

    let one_pass = |records: Vec<(Vec<u8>, Vec<u8>)>| {
        let mut out = vec![Vec::new(); SEGMENT_SHARDS as usize];
        for (k, v) in records {
            let out = &mut out[segment_shard(&k) as usize];
            let at = out.len();
            out.resize(at + 8 + k.len() + v.len(), 0);
            write_record(&mut out[at..], &k, &v);
        }
        out
    };
    let nodes = one_pass(
        all.nodes
            .iter()
            .map(|n| (n.crn.as_bytes().to_vec(), encode_node(&n.row)))
            .collect(),
    );
    let edges = one_pass(
        all.edges
            .iter()
            .map(|e| (edge_key(e).into_bytes(), encode_edge_value(e)))
            .collect(),
    );
    let (parallel_nodes, parallel_edges) = all.segments();
    assert_eq!(parallel_nodes, nodes);
    assert_eq!(parallel_edges, edges);
    // Each buffer was allocated at its size: the lengths are exact.
    for n in &all.nodes {
        assert_eq!(encoded_node_len(&n.row), encode_node(&n.row).len());
    }
    for e in &all.edges {
        assert_eq!(encoded_edge_value_len(e), encode_edge_value(e).len());
    }
    assert!(
        parallel_nodes
            .iter()
            .chain(&parallel_edges)
            .all(|s| s.len() == s.capacity())
    );
    // Every shard is used and every record reads back.
    assert!(nodes.iter().all(|s| !s.is_empty()));
    let records: usize = parallel_nodes.iter().map(|s| records(s).count()).sum();
    assert_eq!(records, 20_000);
}

/// Commits the estate of `e` (nodes `vol-0..n`, each attached to the
/// one at half its number) at `now`, with `state` on every third node.
pub(crate) fn scan(store: &GraphStore, g: &mut Graph, now: u64, seq: u64, n: usize, state: &str) {
    let crn = |n: usize| format!("crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-{n}");
    let mut e = Estate::new(g.interner().clone());
    for i in 0..n {
        e.node(&crn(i), if i % 3 == 0 { state } else { "in-use" }, i as f32);
    }
    for i in 1..n {
        e.edge(&crn(i), &crn(i / 2), Relation::AttachedTo);
    }
    e.scan_into(g, now, seq as u32);
    let aws = g.interner().intern("aws");
    g.retire_unseen(&[aws], now, seq as u32);
    let changes = g.take_changes();
    let persisted = store.load_meta().map(|(symbols, _)| symbols.len()).unwrap_or(0);
    let fresh = g.interner().strings_from(persisted);
    let meta = CommitMeta {
        generation: g.generation(),
        scan_seq: seq,
        commit_us: now,
        rows: (g.node_rows() + g.edge_rows()) as u64,
        observed_s: 0,
    };
    store
        .commit(persisted, &fresh, &changes, || g.all_versions(), meta)
        .unwrap();
}

/// redb keeps no more of the store's pages in memory than the cache it
/// was given, however much the commits write (with redb's default,
/// every page a commit wrote stayed in memory, up to 1 GiB).
#[test]
fn the_store_holds_no_more_pages_in_memory_than_its_cache() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("graph.redb");
    let cache = 256 << 10;
    let store = GraphStore::open_with_cache(&path, cache).unwrap();
    let mut g = Graph::new(Arc::new(Interner::new()));
    scan(&store, &mut g, 100, 1, 20_000, "available");
    scan(&store, &mut g, 200, 2, 20_000, "stopped");
    let written = std::fs::metadata(&path).unwrap().len();
    assert!(written > 4 * cache as u64, "the commits wrote {written} bytes");
    let used = store.database().unwrap().cache_stats().used_bytes();
    assert!(
        used > 0 && used <= cache,
        "{used} bytes cached against a cache of {cache}"
    );
}

/// Every time and every node's history a store answers, to compare two stores.
fn answers(store: &GraphStore, times: &[u64]) -> Vec<String> {
    let mut out: Vec<String> = times
        .iter()
        .map(|ts| {
            let at = sorted(store.graph_at(*ts).unwrap());
            format!("{ts}: {:?} {:?}", at.nodes, at.edges)
        })
        .collect();
    for n in [0, 1, 2, 999, 2999] {
        let crn = format!("crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-{n}");
        let h = store.node_versions(&crn, 10).unwrap();
        out.push(format!("{crn}: {} {:?}", h.total, h.versions));
    }
    out
}

/// A commit whose segments outgrow a transaction's share of the cache
/// goes in several transactions, and the store answers as one written in
/// one transaction each.
#[test]
fn a_commit_in_many_transactions_answers_as_one() {
    let dir = tempfile::tempdir().unwrap();
    let (one, many) = (
        GraphStore::open(&dir.path().join("one.redb")).unwrap(),
        GraphStore::open_with_cache(&dir.path().join("many.redb"), 64 << 10).unwrap(),
    );
    for store in [&one, &many] {
        let mut g = Graph::new(Arc::new(Interner::new()));
        scan(store, &mut g, 100, 1, 3000, "available");
        scan(store, &mut g, 200, 2, 3000, "stopped");
        scan(store, &mut g, 300, 3, 2700, "stopped");
    }
    // One transaction a commit; the other store's segments went in
    // transactions of 4 KiB at most.
    assert_eq!(one.state_seq().unwrap(), 3);
    assert!(many.state_seq().unwrap() > 30, "{}", many.state_seq().unwrap());
    let times = [50, 100, 150, 200, 300, u64::MAX];
    assert_eq!(answers(&one, &times), answers(&many, &times));
    assert_eq!(one.load().unwrap().nodes, many.load().unwrap().nodes);
    assert_eq!(one.stats().unwrap(), many.stats().unwrap());
}

/// Segments past the last commit listed (a commit whose last transaction
/// did not commit) are not read, and the next commit removes them, also
/// when its key is theirs.
#[test]
fn segments_of_a_commit_that_did_not_finish_are_not_read_and_go_with_the_next_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (clean, left) = (
        GraphStore::open(&dir.path().join("clean.redb")).unwrap(),
        GraphStore::open(&dir.path().join("left.redb")).unwrap(),
    );
    let mut graphs = Vec::new();
    for store in [&clean, &left] {
        let mut g = Graph::new(Arc::new(Interner::new()));
        scan(store, &mut g, 100, 1, 3000, "available");
        scan(store, &mut g, 200, 2, 3000, "stopped");
        graphs.push(g);
    }
    // What a commit at 300 (a piece of a segment, and segments the next
    // commit at 300 will not write) and one at 400 left behind.
    let txn = left.database().unwrap().begin_write().unwrap();
    {
        let mut seg = txn.open_table(SEGMENTS).unwrap();
        for (key, bytes) in [
            ((300, PART_NODES_LZ4, 3), compress(b"not a segment")),
            ((300, PART_NODES_LZ4, 3 + 7 * SEGMENT_SHARDS), vec![1, 2, 3]),
            ((300, PART_EDGES_LZ4, 9), vec![4, 5]),
            ((400, PART_NODES_LZ4, 0), vec![6]),
        ] {
            seg.insert(key, bytes.as_slice()).unwrap();
        }
    }
    txn.commit().unwrap();
    let times = [100, 200, 300, 400, u64::MAX];
    assert_eq!(answers(&clean, &times), answers(&left, &times));
    assert_eq!(left.stats().unwrap().segments, clean.stats().unwrap().segments + 4);

    for (store, g) in [&clean, &left].into_iter().zip(&mut graphs) {
        scan(store, g, 300, 3, 2700, "available");
    }
    assert_eq!(answers(&clean, &times), answers(&left, &times));
    assert_eq!(left.stats().unwrap(), clean.stats().unwrap());
}

/// Replaces every stored segment by what `rewrite` writes in its place,
/// in one transaction.
fn rewrite_segments(
    store: &GraphStore,
    mut rewrite: impl FnMut(&mut redb::Table<(u64, u8, u16), &[u8]>, (u64, u8, u16), Vec<u8>),
) {
    let txn = store.database().unwrap().begin_write().unwrap();
    {
        let mut seg = txn.open_table(SEGMENTS).unwrap();
        let stored: Vec<((u64, u8, u16), Vec<u8>)> = seg
            .iter()
            .unwrap()
            .map(|item| {
                let (k, v) = item.unwrap();
                (k.value(), v.value().to_vec())
            })
            .collect();
        for (key, bytes) in stored {
            seg.remove(key).unwrap();
            rewrite(&mut seg, key, bytes);
        }
    }
    txn.commit().unwrap();
}

/// Rewrites every compressed segment as the plain one a store written
/// before compression holds.
fn decompress_all(store: &GraphStore) {
    rewrite_segments(store, |seg, (ts, part, shard), bytes| {
        let (part, plain) = match part {
            PART_NODES_LZ4.. => (part - PART_NODES_LZ4, decompress(&bytes).unwrap()),
            _ => (part, bytes),
        };
        seg.insert((ts, part, shard), plain.as_slice()).unwrap();
    });
}

/// Cuts every compressed segment into pieces of `len` bytes (at most 256),
/// as a commit cuts one past [`PIECE_BYTES`].
fn cut_all(store: &GraphStore, len: usize) {
    rewrite_segments(store, |seg, (ts, part, shard), bytes| {
        assert!(part >= PART_NODES_LZ4 && shard < SEGMENT_SHARDS);
        let len = len.max(bytes.len().div_ceil(256));
        for (i, piece) in bytes.chunks(len).enumerate() {
            seg.insert((ts, part, shard + i as u16 * SEGMENT_SHARDS), piece)
                .unwrap();
        }
    });
}

/// A segment is cut into pieces of a 1 MiB page each, numbered above the
/// shard in the key's shard field, and never into more than 256.
#[test]
fn long_segments_are_cut_into_pieces_that_fill_a_page() {
    let short = vec![7u8; 1000];
    assert_eq!(pieces(5, &short).collect::<Vec<_>>(), [(5, &short[..])]);
    let long: Vec<u8> = (0..3 * PIECE_BYTES + 10).map(|i| i as u8).collect();
    let cut: Vec<(u16, &[u8])> = pieces(255, &long).collect();
    assert_eq!(
        cut.iter().map(|(f, p)| (piece_of(*f), p.len())).collect::<Vec<_>>(),
        [
            ((255, 0), PIECE_BYTES),
            ((255, 1), PIECE_BYTES),
            ((255, 2), PIECE_BYTES),
            ((255, 3), 10)
        ]
    );
    assert_eq!(
        cut.iter().flat_map(|(_, p)| p.iter().copied()).collect::<Vec<u8>>(),
        long
    );
    let huge = vec![0u8; 300 * PIECE_BYTES];
    let cut: Vec<(u16, &[u8])> = pieces(255, &huge).collect();
    assert_eq!(cut.len(), 256);
    assert_eq!(piece_of(cut[255].0), (255, 255));
    assert_eq!(cut.iter().map(|(_, p)| p.len()).sum::<usize>(), huge.len());
}

/// A store whose segments are held in pieces answers every time, and every
/// node's history, as the same store with each segment whole; a piece
/// whose segment is missing is reported as corruption.
#[test]
fn segments_in_pieces_read_as_whole_ones() {
    let dir = tempfile::tempdir().unwrap();
    let (whole, cut) = (
        GraphStore::open(&dir.path().join("whole.redb")).unwrap(),
        GraphStore::open(&dir.path().join("cut.redb")).unwrap(),
    );
    for store in [&whole, &cut] {
        let mut g = Graph::new(Arc::new(Interner::new()));
        scan(store, &mut g, 100, 1, 3000, "available");
        scan(store, &mut g, 200, 2, 3000, "stopped");
        scan(store, &mut g, 300, 3, 2700, "stopped");
    }
    cut_all(&cut, 61);
    let fields: Vec<u16> = {
        let txn = cut.database().unwrap().begin_read().unwrap();
        let seg = txn.open_table(SEGMENTS).unwrap();
        seg.iter().unwrap().map(|item| item.unwrap().0.value().2).collect()
    };
    assert!(fields.iter().any(|f| piece_of(*f).1 > 2), "segments of several pieces");
    for ts in [100, 150, 200, 250, 300, u64::MAX] {
        let (a, b) = (sorted(whole.graph_at(ts).unwrap()), sorted(cut.graph_at(ts).unwrap()));
        assert_eq!(a.nodes, b.nodes, "nodes at {ts}");
        assert_eq!(a.edges, b.edges, "edges at {ts}");
    }
    for n in [0, 1, 2, 2999] {
        let crn = format!("crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-{n}");
        let (a, b) = (
            whole.node_versions(&crn, 10).unwrap(),
            cut.node_versions(&crn, 10).unwrap(),
        );
        assert_eq!((a.total, a.versions), (b.total, b.versions), "{crn}");
    }

    let txn = cut.database().unwrap().begin_write().unwrap();
    {
        let mut seg = txn.open_table(SEGMENTS).unwrap();
        seg.insert((250, PART_NODES_LZ4, 3 + SEGMENT_SHARDS), &[1u8, 2, 3][..])
            .unwrap();
        txn.open_table(COMMITS).unwrap().insert(250, 0).unwrap();
    }
    txn.commit().unwrap();
    match cut.graph_at(u64::MAX) {
        Err(StoreError::Corrupt { what, .. }) => assert_eq!(what, "segment key"),
        Err(other) => panic!("expected corruption, got {other}"),
        Ok(_) => panic!("a piece without its segment was read"),
    }
}

fn sorted(mut at: GraphAt) -> GraphAt {
    at.nodes.sort_by(|a, b| a.crn.cmp(&b.crn));
    at.edges.sort_by_key(edge_key);
    at
}

/// A store whose first commit was written before segments were
/// compressed reads as it did, and later compressed commits replay on
/// top of it: every time answers as in a store written compressed
/// throughout.
#[test]
fn a_store_written_before_compression_reads_the_same_and_takes_compressed_commits() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = (
        GraphStore::open(&dir.path().join("old.redb")).unwrap(),
        GraphStore::open(&dir.path().join("new.redb")).unwrap(),
    );
    let (mut g_old, mut g_new) = (
        Graph::new(Arc::new(Interner::new())),
        Graph::new(Arc::new(Interner::new())),
    );
    scan(&old, &mut g_old, 100, 1, 3000, "available");
    decompress_all(&old);
    scan(&new, &mut g_new, 100, 1, 3000, "available");
    // Two later scans: a third of the nodes change state, then a tenth go.
    for (g, store) in [(&mut g_old, &old), (&mut g_new, &new)] {
        scan(store, g, 200, 2, 3000, "stopped");
        scan(store, g, 300, 3, 2700, "stopped");
    }
    let plain_parts = {
        let txn = old.database().unwrap().begin_read().unwrap();
        let seg = txn.open_table(SEGMENTS).unwrap();
        let parts: Vec<u8> = seg.iter().unwrap().map(|item| item.unwrap().0.value().1).collect();
        parts
    };
    assert!(plain_parts.contains(&PART_NODES) && plain_parts.contains(&PART_EDGES_LZ4));
    for ts in [100, 150, 200, 250, 300, u64::MAX] {
        let (a, b) = (sorted(old.graph_at(ts).unwrap()), sorted(new.graph_at(ts).unwrap()));
        assert_eq!(a.nodes, b.nodes, "nodes at {ts}");
        assert_eq!(a.edges, b.edges, "edges at {ts}");
    }
    let now = new.graph_at(300).unwrap();
    assert_eq!((now.nodes.len(), now.edges.len()), (2700, 2699));
    let at = new.graph_at(150).unwrap();
    assert_eq!(at.nodes.len(), 3000);
    let i = Interner::from_strings(new.load().unwrap().symbols).unwrap();
    let available = at
        .nodes
        .iter()
        .filter(|n| &*i.resolve(n.row.state) == "available")
        .count();
    assert_eq!(available, 1000);
}

/// A compressed segment that does not decompress, or that claims more
/// bytes than LZ4 could give, is reported as corruption naming the
/// store: nothing panics and nothing is allocated for the claim.
#[test]
fn a_damaged_compressed_segment_is_reported_as_corruption() {
    let mut huge = u32::MAX.to_le_bytes().to_vec();
    huge.extend_from_slice(b"tiny");
    let mut junk = 4000u32.to_le_bytes().to_vec();
    junk.extend_from_slice(&[0xf0; 64]);
    for damage in [huge, junk, vec![1, 2]] {
        let dir = tempfile::tempdir().unwrap();
        let store = GraphStore::open(&dir.path().join("graph.redb")).unwrap();
        let mut g = Graph::new(Arc::new(Interner::new()));
        scan(&store, &mut g, 100, 1, 500, "available");
        let txn = store.database().unwrap().begin_write().unwrap();
        {
            let mut seg = txn.open_table(SEGMENTS).unwrap();
            let first = seg.first().unwrap().unwrap().0.value();
            assert_eq!(first.1, PART_NODES_LZ4);
            seg.insert(first, damage.as_slice()).unwrap();
        }
        txn.commit().unwrap();
        match store.graph_at(u64::MAX) {
            Err(StoreError::Corrupt { what, .. }) => assert_eq!(what, "node segment"),
            Err(other) => panic!("expected corruption, got {other}"),
            Ok(_) => panic!("a damaged segment must not read"),
        }
    }
}

/// Rows encoded straight from the shards give the segments their owned
/// versions give: every row (a checkpoint), and the rows a later scan
/// changed, waste verdicts and reasons included.
#[test]
fn versions_read_from_the_graph_encode_as_their_owned_copies() {
    use svc_graph::graph::Verdict;
    let dir = tempfile::tempdir().unwrap();
    let store = GraphStore::open(&dir.path().join("graph.redb")).unwrap();
    let mut g = Graph::new(Arc::new(Interner::new()));
    scan(&store, &mut g, 100, 1, 3000, "available");
    let rule = g.interner().intern("unattached-volume");
    let ids: Vec<NodeId> = g.nodes().map(|n| n.id()).step_by(7).collect();
    for id in &ids {
        let verdict = Verdict {
            is_waste: true,
            reason: "unattached for 43 days, 500 GiB gp2, $40.00/mo",
            rule: Some(rule),
        };
        g.set_verdict(*id, &verdict, 150);
    }
    let crn = |n: usize| format!("crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-{n}");
    let mut e = Estate::new(g.interner().clone());
    for i in 0..2900 {
        e.node(&crn(i), if i % 5 == 0 { "stopped" } else { "in-use" }, i as f32);
    }
    for i in 1..2900 {
        e.edge(&crn(i), &crn(i / 3), Relation::Uses);
    }
    e.scan_into(&mut g, 200, 2);
    let aws = g.interner().intern("aws");
    g.retire_unseen(&[aws], 200, 2);

    let rows = g.take_dirty_rows();
    let (nodes, edges) = rows.counts();
    assert!(nodes > 100 && edges > 100 && nodes < g.node_rows());
    let owned = g.versions(&rows);
    let read = GraphVersions { graph: &g, rows };
    assert_eq!(read.counts(), owned.counts());
    assert_eq!(read.segments(), owned.segments());
    let all = GraphVersions {
        graph: &g,
        rows: g.all_rows(),
    };
    assert_eq!(all.segments(), g.all_versions().segments());
    // A few rows: only the nodes they mention are rendered.
    for id in ids.iter().take(10) {
        g.set_verdict(*id, &Verdict::CLEAR, 250);
    }
    let mut e = Estate::new(g.interner().clone());
    e.edge(&crn(5), &crn(7), Relation::FlowsTo);
    e.edge(&crn(7), &crn(5), Relation::FlowsTo);
    e.scan_into(&mut g, 250, 3);
    let rows = g.take_dirty_rows();
    assert_eq!(rows.counts(), (10, 2));
    let owned = g.versions(&rows);
    assert_eq!(GraphVersions { graph: &g, rows }.segments(), owned.segments());
    let reader = g.interner().reader();
    for n in g.nodes().take(50) {
        let mut out = Vec::new();
        g.crn_into(&reader, n.id(), &mut out);
        assert_eq!(out, g.crn_with(&reader, n.id()).into_bytes());
    }
}

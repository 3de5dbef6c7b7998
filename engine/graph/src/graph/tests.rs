use std::sync::Arc;

use super::*;
use crate::blast::blast_radius;
use crate::crn::Crn;
use crate::fixture::Estate;
use crate::intern::Interner;
use crate::props::{PropWriter, ValueRef};

fn crn(kind: &str, id: &str) -> String {
    let service = crate::crn::service_for("aws", kind);
    format!("crn:svc:aws:us-east-1:{service}:{kind}:123456789012:{id}")
}

fn find(g: &Graph, s: &str) -> NodeId {
    g.find(&Crn::parse(s).unwrap()).unwrap()
}

#[test]
fn ingest_inserts_then_recognises_unchanged_and_changed_nodes() {
    let i = Arc::new(Interner::new());
    let mut g = Graph::new(i.clone());
    let mut e = Estate::new(i.clone());
    e.node(&crn("volume", "vol-1"), "available", 40.0)
        .node(&crn("instance", "i-1"), "running", 70.0);
    let (n, _) = e.scan_into(&mut g, 1_000, 1);
    assert_eq!((n.inserted, n.changed, n.unchanged), (2, 0, 0));
    assert_eq!(g.take_changes().nodes.len(), 2);
    e.node(&crn("volume", "vol-1"), "available", 40.0)
        .node(&crn("instance", "i-1"), "stopped", 70.0);
    let (n, _) = e.scan_into(&mut g, 2_000, 2);
    assert_eq!((n.inserted, n.changed, n.unchanged), (0, 1, 1));
    let changes = g.take_changes();
    assert_eq!(changes.nodes.len(), 1);
    assert_eq!(changes.nodes[0].crn, crn("instance", "i-1"));
    assert_eq!(changes.nodes[0].row.valid_from, 2_000);
    let node = g.node(find(&g, &crn("instance", "i-1"))).unwrap();
    assert_eq!(&*i.resolve(node.state()), "stopped");
    assert_eq!(&*i.resolve(node.ty()), "ec2:instance");
    assert_eq!(node.props().get(i.intern("size_gib")), Some(ValueRef::Int(100)));
    assert_eq!(node.crn(), crn("instance", "i-1"));
}

#[test]
fn nodes_land_in_the_shard_of_their_key_hash() {
    let i = Arc::new(Interner::new());
    let mut g = Graph::new(i.clone());
    let mut e = Estate::new(i.clone());
    for n in 0..2000 {
        e.node(&crn("volume", &format!("vol-{n}")), "available", 1.0);
    }
    e.scan_into(&mut g, 1, 1);
    let mut used = 0;
    for (s, shard) in g.node_shards().iter().enumerate() {
        used += usize::from(!shard.is_empty());
        for r in 0..shard.len() {
            assert_eq!(shard.key_hash(r) % 256, s as u64);
            let c = Crn::parse(&g.crn(NodeId::new(s, r as u32, 0))).unwrap();
            assert_eq!(NodeKeyRef::intern(&i, &c).hash(), shard.key_hash(r));
        }
    }
    // 2000 keys over 256 shards: all but a handful of shards get some.
    assert!(used > 240, "only {used} shards used");
    assert_eq!(g.node_rows(), 2000);
}

#[test]
fn visibility_rule_hides_retired_rows_but_keeps_them() {
    let i = Arc::new(Interner::new());
    let mut g = Graph::new(i.clone());
    let mut e = Estate::new(i.clone());
    let (a, b) = (crn("volume", "vol-a"), crn("instance", "i-b"));
    e.node(&a, "in-use", 10.0)
        .node(&b, "running", 20.0)
        .edge(&a, &b, Relation::AttachedTo);
    e.scan_into(&mut g, 100, 1);
    g.rebuild_adjacency(100);
    assert_eq!(g.stats(100).total_edges, 1);
    // Scan 2 reports only the volume: the instance and the edge are retired.
    e.node(&a, "in-use", 10.0);
    e.scan_into(&mut g, 200, 2);
    let (nodes, edges) = g.retire_unseen(&[i.intern("aws")], 200, 2);
    assert_eq!((nodes, edges), (1, 1));
    let bid = find(&g, &b);
    assert_eq!(g.node(bid).unwrap().valid_to(), 200);
    assert!(!g.is_node_visible(bid, 200));
    assert!(g.is_node_visible(bid, 199), "visible when valid_to is later than now");
    let st = g.stats(200);
    assert_eq!(
        (st.total_nodes, st.active_nodes, st.logically_deleted, st.total_edges),
        (2, 1, 1, 0)
    );
    // A provider not listed (its scan failed) keeps its nodes.
    let mut e2 = Estate::new(i.clone());
    e2.node("crn:svc:gcp:us-central1:compute:disk:proj:d1", "READY", 5.0);
    e2.scan_into(&mut g, 300, 3);
    assert_eq!(g.retire_unseen(&[i.intern("aws")], 400, 4).0, 1, "only aws is retired");
    assert!(g.is_node_visible(find(&g, "crn:svc:gcp:us-central1:compute:disk:proj:d1"), 400));
    // Reappearing revives it with a new version.
    e.node(&b, "running", 20.0);
    let (n, _) = e.scan_into(&mut g, 500, 5);
    assert_eq!(n.revived, 1);
    assert!(g.is_node_visible(bid, 500));
    assert_eq!(g.node(bid).unwrap().valid_from(), 500);
}

#[test]
fn edges_resolve_across_batches_and_count_dangling() {
    let i = Arc::new(Interner::new());
    let mut g = Graph::new(i.clone());
    let mut e1 = Estate::new(i.clone());
    let mut e2 = Estate::new(i.clone());
    let (a, b) = (crn("volume", "v"), crn("instance", "i"));
    e1.node(&a, "in-use", 1.0)
        .edge(&a, &b, Relation::AttachedTo)
        .edge(&a, &crn("instance", "missing"), Relation::Uses);
    e2.node(&b, "running", 1.0);
    let nodes = [std::mem::take(&mut e1.nodes), std::mem::take(&mut e2.nodes)];
    g.ingest_nodes(&nodes, 10, 1);
    let st = g.ingest_edges(&[std::mem::take(&mut e1.edges)], 10, 1);
    assert_eq!((st.inserted, st.dangling), (1, 1));
    g.rebuild_adjacency(10);
    let out: Vec<_> = g
        .node(find(&g, &a))
        .unwrap()
        .out_edges()
        .map(|e| (e.target(), e.relation()))
        .collect();
    assert_eq!(out, vec![(find(&g, &b), Relation::AttachedTo)]);
    let inc: Vec<_> = g.node(find(&g, &b)).unwrap().in_edges().map(|e| e.source()).collect();
    assert_eq!(inc, vec![find(&g, &a)]);
}

#[test]
fn neighbours_by_relation_are_the_visible_edges_of_that_relation() {
    let i = Arc::new(Interner::new());
    let mut g = Graph::new(i.clone());
    let mut e = Estate::new(i.clone());
    let (v, a, b, sg) = (
        crn("volume", "v"),
        crn("instance", "a"),
        crn("instance", "b"),
        crn("security-group", "s"),
    );
    for n in [&v, &a, &b, &sg] {
        e.node(n, "running", 1.0);
    }
    e.edge(&v, &a, Relation::AttachedTo)
        .edge(&v, &sg, Relation::SecuredBy)
        .edge(&v, &b, Relation::AttachedTo)
        .edge(&a, &sg, Relation::SecuredBy);
    e.scan_into(&mut g, 10, 1);
    g.rebuild_adjacency(10);
    // What the edge rows say, read one by one.
    let by_rows = |g: &Graph, id: NodeId, rel: Relation, out: bool, now: u64| -> Vec<NodeId> {
        let n = g.node(id).unwrap();
        let edges: Vec<_> = if out {
            n.out_edges().collect()
        } else {
            n.in_edges().collect()
        };
        edges
            .into_iter()
            .filter(|e| e.relation() == rel && visible(e.valid_to(), now))
            .map(|e| if out { e.target() } else { e.source() })
            .collect()
    };
    let (vid, aid, bid, sid) = (find(&g, &v), find(&g, &a), find(&g, &b), find(&g, &sg));
    let mut attached: Vec<_> = g.neighbours(vid, Relation::AttachedTo, true, 11).collect();
    attached.sort_unstable();
    let mut want = vec![aid, bid];
    want.sort_unstable();
    assert_eq!(attached, want);
    assert_eq!(
        g.neighbours(vid, Relation::SecuredBy, true, 11).collect::<Vec<_>>(),
        vec![sid]
    );
    assert_eq!(g.neighbours(vid, Relation::Contains, true, 11).count(), 0);
    assert_eq!(
        g.neighbours(aid, Relation::AttachedTo, false, 11).collect::<Vec<_>>(),
        vec![vid]
    );
    for (id, rel, out) in [
        (vid, Relation::AttachedTo, true),
        (sid, Relation::SecuredBy, false),
        (aid, Relation::SecuredBy, true),
    ] {
        assert_eq!(
            g.neighbours(id, rel, out, 11).collect::<Vec<_>>(),
            by_rows(&g, id, rel, out, 11)
        );
    }

    // The volume's edges are retired as of a later time, the index built
    // before it: until then they are listed and visible, after it the
    // edge rows are read and say they are gone.
    e.node(&a, "running", 1.0)
        .node(&b, "running", 1.0)
        .node(&sg, "running", 1.0);
    e.edge(&a, &sg, Relation::SecuredBy);
    e.scan_into(&mut g, 20, 2);
    let aws = i.intern("aws");
    g.retire_unseen(&[aws], 100, 2);
    g.rebuild_adjacency(21);
    assert!(g.adjacency().all_visible(50));
    assert_eq!(g.neighbours(sid, Relation::SecuredBy, false, 50).count(), 2);
    assert!(!g.adjacency().all_visible(100));
    assert_eq!(g.neighbours(vid, Relation::AttachedTo, true, 100).count(), 0);
    assert_eq!(
        g.neighbours(sid, Relation::SecuredBy, false, 100).collect::<Vec<_>>(),
        vec![aid]
    );
    for (id, rel, out) in [(sid, Relation::SecuredBy, false), (vid, Relation::SecuredBy, true)] {
        for now in [50, 100] {
            assert_eq!(
                g.neighbours(id, rel, out, now).collect::<Vec<_>>(),
                by_rows(&g, id, rel, out, now)
            );
        }
    }
}

/// vpc contains subnet contains instance; a volume is attached to the
/// instance; a pod runs on the instance; a function uses a database; the
/// instance is secured by a security group.
fn sample(g: &mut Graph, i: &Arc<Interner>) -> Vec<String> {
    let names: Vec<String> = [
        ("vpc", "vpc-1", 0.0),
        ("subnet", "subnet-1", 0.0),
        ("instance", "i-1", 70.0),
        ("volume", "vol-1", 40.0),
        ("security-group", "sg-1", 0.0),
        ("db", "db-1", 300.0),
        ("function", "fn-1", 3.0),
    ]
    .iter()
    .map(|(k, id, _)| crn(k, id))
    .collect();
    let pod = "crn:svc:kubernetes:us-east-1:core:pod:prod-cluster:default/web-1".to_string();
    let mut e = Estate::new(i.clone());
    for (n, cost) in names.iter().zip([0.0, 0.0, 70.0, 40.0, 0.0, 300.0, 3.0]) {
        e.node(n, "running", cost);
    }
    e.node(&pod, "Running", 0.5);
    e.edge(&names[0], &names[1], Relation::Contains)
        .edge(&names[1], &names[2], Relation::Contains)
        .edge(&names[3], &names[2], Relation::AttachedTo)
        .edge(&names[2], &names[4], Relation::SecuredBy)
        .edge(&pod, &names[2], Relation::Runs)
        .edge(&names[6], &names[5], Relation::Uses);
    e.scan_into(g, 1, 1);
    g.rebuild_adjacency(1);
    let mut all = names;
    all.push(pod);
    all
}

#[test]
fn blast_radius_follows_dependence() {
    let i = Arc::new(Interner::new());
    let mut g = Graph::new(i.clone());
    let n = sample(&mut g, &i);
    let crns = |b: &crate::blast::BlastRadius| {
        let mut v: Vec<String> = b.affected.iter().map(|a| g.crn(a.id)).collect();
        v.sort();
        v
    };
    // Removing the vpc takes the subnet, then the instance, then the pod.
    let b = blast_radius(&g, find(&g, &n[0]), 100).unwrap();
    let mut want = vec![n[1].clone(), n[2].clone(), n[7].clone()];
    want.sort();
    assert_eq!(crns(&b), want);
    assert_eq!(b.count, 3);
    assert_eq!(b.max_depth, 3);
    assert!((b.total_cost_usd_mo - 70.5).abs() < 1e-6);
    // Removing the volume affects the instance it is attached to, and its pod.
    let b = blast_radius(&g, find(&g, &n[3]), 100).unwrap();
    assert_eq!(b.count, 2);
    // Removing the security group affects the instance (and its pod).
    let b = blast_radius(&g, find(&g, &n[4]), 100).unwrap();
    assert_eq!(b.count, 2);
    // Removing the database affects the function; removing the function nothing.
    assert_eq!(
        crns(&blast_radius(&g, find(&g, &n[5]), 100).unwrap()),
        vec![n[6].clone()]
    );
    assert_eq!(blast_radius(&g, find(&g, &n[6]), 100).unwrap().count, 0);
    // The listing limit cuts the list but not the count or cost.
    let b = blast_radius(&g, find(&g, &n[0]), 1).unwrap();
    assert_eq!((b.affected.len(), b.count, b.truncated), (1, 3, true));
    assert_eq!(b.affected[0].depth, 1);
    assert_eq!(g.crn(b.affected[0].id), n[1]);
}

#[test]
fn blast_radius_terminates_on_cycles() {
    let i = Arc::new(Interner::new());
    let mut g = Graph::new(i.clone());
    let mut e = Estate::new(i.clone());
    let ids: Vec<String> = (0..5).map(|k| crn("function", &format!("f{k}"))).collect();
    for c in &ids {
        e.node(c, "active", 1.0);
    }
    for k in 0..5 {
        e.edge(&ids[k], &ids[(k + 1) % 5], Relation::Uses);
    }
    e.scan_into(&mut g, 1, 1);
    g.rebuild_adjacency(1);
    let b = blast_radius(&g, find(&g, &ids[0]), 100).unwrap();
    assert_eq!(b.count, 4);
    assert_eq!(b.max_depth, 4);
}

#[test]
fn changes_round_trip_through_load() {
    let i = Arc::new(Interner::new());
    let mut g = Graph::new(i.clone());
    let n = sample(&mut g, &i);
    g.set_verdict(
        find(&g, &n[3]),
        &Verdict {
            is_waste: true,
            reason: "unattached for 43 days",
            rule: None,
        },
        1,
    );
    let changes = g.take_changes();
    assert_eq!(g.generation(), 1);
    let mut h = Graph::new(i.clone());
    for v in &changes.nodes {
        h.load_node(&v.row);
    }
    for e in &changes.edges {
        assert!(h.load_edge(e));
    }
    h.rebuild_adjacency(1);
    assert_eq!(h.stats(1), g.stats(1));
    let vol = h.node(find(&h, &n[3])).unwrap();
    assert!(vol.is_waste());
    assert_eq!(vol.waste_reason(), "unattached for 43 days");
    assert_eq!(blast_radius(&h, find(&h, &n[0]), 10).unwrap().count, 3);
    assert!(h.take_changes().is_empty(), "loading is not a change");
}

#[test]
fn paging_visits_every_row_once() {
    let i = Arc::new(Interner::new());
    let mut g = Graph::new(i.clone());
    let mut e = Estate::new(i.clone());
    for n in 0..1000 {
        e.node(&crn("volume", &format!("v{n}")), "available", 1.0);
    }
    e.scan_into(&mut g, 1, 1);
    let mut seen = std::collections::HashSet::new();
    let mut cursor = None;
    loop {
        let page: Vec<NodeId> = g.nodes_after(cursor).take(97).map(|n| n.id()).collect();
        if page.is_empty() {
            break;
        }
        for id in &page {
            assert!(seen.insert(*id));
        }
        cursor = page.last().copied();
    }
    assert_eq!(seen.len(), 1000);
}

#[test]
fn edges_are_unchanged_until_their_properties_change() {
    let i = Arc::new(Interner::new());
    let mut g = Graph::new(i.clone());
    let (a, b) = (crn("volume", "v"), crn("instance", "i"));
    let key = i.intern("device");
    let scan = |g: &mut Graph, device: &str, seq: u32| {
        let mut e = Estate::new(i.clone());
        e.node(&a, "in-use", 1.0).node(&b, "running", 1.0);
        let (ca, cb) = (Crn::parse(&a).unwrap(), Crn::parse(&b).unwrap());
        e.edges.push(
            NodeKeyRef::intern(&i, &ca),
            NodeKeyRef::intern(&i, &cb),
            Relation::AttachedTo,
            |w| w.str(key, device),
        );
        e.scan_into(g, u64::from(seq) * 100, seq).1
    };
    assert_eq!(scan(&mut g, "/dev/xvda", 1).inserted, 1);
    g.take_changes();
    assert_eq!(scan(&mut g, "/dev/xvda", 2).unchanged, 1);
    assert!(g.take_changes().edges.is_empty());
    assert_eq!(scan(&mut g, "/dev/xvdb", 3).changed, 1);
    let changes = g.take_changes();
    assert_eq!(changes.edges.len(), 1);
    assert_eq!(changes.edges[0].valid_from, 300);
}

#[test]
fn edges_reported_in_another_order_are_found_as_in_the_first() {
    let i = Arc::new(Interner::new());
    let mut g = Graph::new(i.clone());
    let hub = crn("instance", "i-hub");
    let key = i.intern("device");
    // Every edge leaves the hub, so all of them share one edge shard.
    let scan = |g: &mut Graph, order: &[usize], device: &dyn Fn(usize) -> usize, seq: u32| {
        let mut e = Estate::new(i.clone());
        e.node(&hub, "running", 1.0);
        let h = Crn::parse(&hub).unwrap();
        for &k in order {
            let v = crn("volume", &format!("vol-{k}"));
            e.node(&v, "in-use", 1.0);
            let v = Crn::parse(&v).unwrap();
            let dev = format!("/dev/xvd{}", device(k));
            e.edges.push(
                NodeKeyRef::intern(&i, &h),
                NodeKeyRef::intern(&i, &v),
                Relation::AttachedTo,
                |w| w.str(key, &dev),
            );
        }
        e.scan_into(g, u64::from(seq) * 100, seq).1
    };
    let forward: Vec<usize> = (0..300).collect();
    assert_eq!(scan(&mut g, &forward, &|_| 0, 1).inserted, 300);
    let backward: Vec<usize> = (0..300).rev().collect();
    let st = scan(&mut g, &backward, &|k| usize::from(k % 5 == 0), 2);
    assert_eq!((st.inserted, st.changed, st.unchanged), (0, 60, 240));
    let shuffled: Vec<usize> = (0..320).map(|k| (k * 7919) % 320).collect();
    let st = scan(&mut g, &shuffled, &|k| usize::from(k % 5 == 0), 3);
    assert_eq!((st.inserted, st.changed, st.unchanged), (20, 0, 300));
    let st = scan(&mut g, &forward, &|_| 0, 4);
    assert_eq!((st.inserted, st.changed, st.unchanged), (0, 60, 240));
}

#[test]
fn an_edge_batch_keeps_each_endpoint_once_and_edges_resolve_through_it() {
    let i = Arc::new(Interner::new());
    let mut g = Graph::new(i.clone());
    let mut e = Estate::new(i.clone());
    let (vpc, sub, vm, vol) = (
        crn("vpc", "vpc-1"),
        crn("subnet", "subnet-1"),
        crn("instance", "i-1"),
        crn("volume", "vol-1"),
    );
    for c in [&vpc, &sub, &vm, &vol] {
        e.node(c, "available", 1.0);
    }
    e.edge(&sub, &vpc, Relation::Contains)
        .edge(&vm, &sub, Relation::Contains)
        .edge(&vol, &vm, Relation::AttachedTo);
    // Written again after sealing: the keys are indexed anew, not repeated.
    e.edges.seal();
    e.edge(&vm, &vpc, Relation::Uses)
        .edge(&vol, &crn("volume", "vol-nowhere"), Relation::Uses);
    assert_eq!((e.edges.len(), e.edges.endpoints()), (5, 5));
    let written: Vec<(String, String)> = e
        .edges
        .iter()
        .map(|r| (r.src.1.to_owned(), r.dst.1.to_owned()))
        .collect();
    let pairs = [
        ("subnet-1", "vpc-1"),
        ("i-1", "subnet-1"),
        ("vol-1", "i-1"),
        ("i-1", "vpc-1"),
        ("vol-1", "vol-nowhere"),
    ];
    assert_eq!(written, pairs.map(|(a, b)| (a.to_owned(), b.to_owned())));
    // The same edges by endpoint index, in the same order, with their relations.
    let ids: Vec<&str> = e.edges.endpoint_keys().map(|(_, id)| id).collect();
    assert_eq!(ids, ["subnet-1", "vpc-1", "i-1", "vol-1", "vol-nowhere"]);
    let indexed: Vec<(&str, &str, Relation)> = e
        .edges
        .iter_indexed()
        .map(|r| (ids[r.src], ids[r.dst], r.relation))
        .collect();
    let relations = [
        Relation::Contains,
        Relation::Contains,
        Relation::AttachedTo,
        Relation::Uses,
        Relation::Uses,
    ];
    let want: Vec<(&str, &str, Relation)> = pairs.iter().zip(relations).map(|((a, b), r)| (*a, *b, r)).collect();
    assert_eq!(indexed, want);
    let (_, st) = e.scan_into(&mut g, 1, 1);
    assert_eq!((st.inserted, st.dangling), (4, 1));
    let (vm, vpc) = (find(&g, &vm), find(&g, &vpc));
    assert!(g.find_edge(vm, vpc, Relation::Uses).is_some());
    assert!(g.find_edge(find(&g, &vol), vm, Relation::AttachedTo).is_some());
}

#[test]
fn edges_pushed_between_endpoint_indexes_land_as_edges_by_key_sharing_properties_within_their_batch() {
    let i = Arc::new(Interner::new());
    let (vm, vol) = (crn("instance", "i-1"), crn("volume", "vol-1"));
    let (vm_key, vol_key) = (Crn::parse(&vm).unwrap(), Crn::parse(&vol).unwrap());
    let mut b = EdgeBatch::with_capacity(8);
    let a = b.endpoint(NodeKeyRef::intern(&i, &vm_key));
    let v = b.endpoint(NodeKeyRef::intern(&i, &vol_key));
    assert_ne!(a, v);
    assert_eq!(
        b.endpoint(NodeKeyRef::intern(&i, &vm_key)),
        a,
        "an endpoint is kept once"
    );
    let rel = i.intern("relation");
    let attached = b.push_between(v, a, Relation::AttachedTo, |w| w.str(rel, "ATTACHED_TO"));
    let attached = attached.expect("both are endpoints");
    assert!(
        b.push_between(v, 2, Relation::Uses, |w| w.str(rel, "USES")).is_none(),
        "no endpoint 2"
    );
    assert!(!b.push_sharing(2, a, Relation::Uses, attached), "no endpoint 2");
    // The reverse edge, with the first one's properties.
    assert!(b.push_sharing(a, v, Relation::Uses, attached));
    let mut other = EdgeBatch::with_capacity(8);
    let (oa, ov) = (
        other.endpoint(NodeKeyRef::intern(&i, &vm_key)),
        other.endpoint(NodeKeyRef::intern(&i, &vol_key)),
    );
    assert!(
        !other.push_sharing(oa, ov, Relation::Uses, attached),
        "properties of another batch"
    );
    assert_eq!((b.len(), b.endpoints(), other.len()), (2, 2, 0));
    let relations: Vec<String> = b
        .iter()
        .map(|e| match e.props.get(rel) {
            Some(ValueRef::Str(s)) => s.to_owned(),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(relations, ["ATTACHED_TO", "ATTACHED_TO"]);
    // Every batch has a serial of its own.
    let others = [
        EdgeBatch::default(),
        EdgeBatch::with_capacity(8),
        EdgeBatch::with_capacity_bytes(1, 1),
    ];
    let mut serials: Vec<u64> = others.iter().chain([&b]).map(EdgeBatch::serial).collect();
    serials.sort_unstable();
    serials.dedup();
    assert_eq!(serials.len(), 4);
    let mut g = Graph::new(i.clone());
    let mut e = Estate::new(i.clone());
    e.node(&vm, "running", 1.0).node(&vol, "in-use", 1.0);
    g.ingest_nodes(&[std::mem::take(&mut e.nodes)], 1, 1);
    assert_eq!(g.ingest_edges(&[b], 1, 1).inserted, 2);
    assert!(
        g.find_edge(find(&g, &vol), find(&g, &vm), Relation::AttachedTo)
            .is_some()
    );
    assert!(g.find_edge(find(&g, &vm), find(&g, &vol), Relation::Uses).is_some());
}

#[test]
fn a_state_adjusted_in_the_batch_is_seen_as_a_change_and_then_as_unchanged() {
    let i = Arc::new(Interner::new());
    let mut g = Graph::new(i.clone());
    let vol = crn("volume", "vol-1");
    let mut e = Estate::new(i.clone());
    e.node(&vol, "in-use", 1.0);
    let (st, _) = e.scan_into(&mut g, 1, 1);
    assert_eq!(st.inserted, 1);
    // The same node, its state replaced after it was written.
    e.node(&vol, "in-use", 1.0);
    let stopped = i.intern("stopped");
    e.nodes.adjust(|_, _, _| crate::graph::Adjust::State(stopped));
    let (st, _) = e.scan_into(&mut g, 2, 2);
    assert_eq!((st.changed, st.unchanged), (1, 0));
    let id = find(&g, &vol);
    assert_eq!(g.node(id).map(|n| n.state()), Some(stopped));
    // Written as stopped from the start: the same content.
    e.node(&vol, "stopped", 1.0);
    let (st, _) = e.scan_into(&mut g, 3, 3);
    assert_eq!((st.changed, st.unchanged), (0, 1));
}

#[test]
fn edges_with_the_same_properties_share_them_in_the_batch_and_land_as_their_own_edges() {
    let i = Arc::new(Interner::new());
    let mut g = Graph::new(i.clone());
    let mut e = Estate::new(i.clone());
    let vols: Vec<String> = (0..50).map(|k| crn("volume", &format!("vol-{k}"))).collect();
    let vm = crn("instance", "i-1");
    e.node(&vm, "running", 1.0);
    for v in &vols {
        e.node(v, "in-use", 1.0).edge(v, &vm, Relation::AttachedTo);
    }
    e.edge(&vm, &vols[0], Relation::Uses);
    let one_copy = e.edges.buffer_len();
    let relations: Vec<String> = e
        .edges
        .iter()
        .map(|r| {
            r.props
                .get(i.intern("relation"))
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        })
        .collect();
    let (attached, uses) = (Relation::AttachedTo.name(), Relation::Uses.name());
    assert_eq!(relations.iter().filter(|r| *r == attached).count(), 50);
    assert_eq!(relations.last().map(String::as_str), Some(uses));
    // The ids, plus the two properties once each.
    let ids: usize = vols
        .iter()
        .map(|v| v.rsplit(':').next().unwrap_or("").len())
        .sum::<usize>()
        + "i-1".len();
    assert!(one_copy < ids + 2 * 32, "{one_copy} bytes for {ids} bytes of ids");
    let (_, st) = e.scan_into(&mut g, 1, 1);
    assert_eq!(st.inserted, 51);
    let vm = find(&g, &vm);
    let back = g
        .find_edge(vm, find(&g, &vols[0]), Relation::Uses)
        .and_then(|id| g.edge(id));
    assert_eq!(
        back.and_then(|e| e
            .props()
            .get(i.intern("relation"))
            .and_then(|v| v.as_str().map(str::to_owned)))
            .as_deref(),
        Some(uses)
    );
}

/// Edges of one batch with the same properties (one relation string) keep
/// them once in their shard; an edge whose properties change gets its own
/// copy, and the others still read theirs.
#[test]
fn edges_with_the_same_properties_keep_one_copy_in_their_shard() {
    let i = Arc::new(Interner::new());
    let mut g = Graph::new(i.clone());
    let vm = crn("instance", "i-1");
    let vols: Vec<String> = (0..50).map(|k| crn("volume", &format!("vol-{k}"))).collect();
    let relation = i.intern("relation");
    let scan = |g: &mut Graph, changed: Option<&str>, n: u32| {
        let mut e = Estate::new(i.clone());
        e.node(&vm, "running", 1.0);
        for (k, v) in vols.iter().enumerate() {
            e.node(v, "in-use", 1.0);
            let text = match changed {
                Some(text) if k == 0 => text,
                _ => "USES",
            };
            let (a, b) = (Crn::parse(&vm).unwrap(), Crn::parse(v).unwrap());
            e.edges.push(
                NodeKeyRef::intern(&i, &a),
                NodeKeyRef::intern(&i, &b),
                Relation::Uses,
                |w| w.str(relation, text),
            );
        }
        e.scan_into(g, u64::from(n), n).1
    };
    let text_of = |g: &Graph, v: &str| {
        g.find_edge(find(g, &vm), find(g, v), Relation::Uses)
            .and_then(|id| g.edge(id))
            .and_then(|e| e.props().get(relation).and_then(|v| v.as_str().map(str::to_owned)))
    };
    let arena = |g: &Graph| g.edges.iter().map(|s| s.arena.len()).sum::<usize>();
    // One blob's bytes in the arena: its length's byte, then the properties.
    let one = |g: &Graph| {
        g.edges
            .iter()
            .flat_map(|s| s.props.iter().map(|p| p.len(&s.arena)))
            .max()
            .map_or(0, |len| 1 + len)
    };
    let st = scan(&mut g, None, 1);
    assert_eq!(st.inserted, 50);
    // Every edge's source is the instance: one shard holds them all.
    assert!(one(&g) > 0);
    assert_eq!(arena(&g), one(&g), "the properties once, not once an edge");
    assert!(vols.iter().all(|v| text_of(&g, v).as_deref() == Some("USES")));
    // The same scan again: nothing written.
    let st = scan(&mut g, None, 2);
    assert_eq!((st.unchanged, st.changed), (50, 0));
    assert_eq!(arena(&g), one(&g));
    // One edge's relation string changes: it alone gets a new copy.
    let uses = one(&g);
    let st = scan(&mut g, Some("USES_NOW"), 3);
    assert_eq!((st.unchanged, st.changed), (49, 1));
    assert_eq!(arena(&g), uses + uses + "_NOW".len());
    assert_eq!(text_of(&g, &vols[0]).as_deref(), Some("USES_NOW"));
    assert!(vols[1..].iter().all(|v| text_of(&g, v).as_deref() == Some("USES")));
}

/// Edges loaded from the graph store and edges the engine infers keep one
/// copy of properties they share in their shard, as scanned edges do: a
/// restarted daemon holds what a scanning one holds.
#[test]
fn loaded_and_inferred_edges_with_the_same_properties_keep_one_copy() {
    let i = Arc::new(Interner::new());
    let mut g = Graph::new(i.clone());
    let vm = crn("instance", "i-1");
    let vols: Vec<String> = (0..50).map(|k| crn("volume", &format!("vol-{k}"))).collect();
    let relation = i.intern("relation");
    let mut e = Estate::new(i.clone());
    e.node(&vm, "running", 1.0);
    for v in &vols {
        e.node(v, "in-use", 1.0);
        let (a, b) = (Crn::parse(&vm).unwrap(), Crn::parse(v).unwrap());
        e.edges.push(
            NodeKeyRef::intern(&i, &a),
            NodeKeyRef::intern(&i, &b),
            Relation::Uses,
            |w| w.str(relation, "USES"),
        );
    }
    e.scan_into(&mut g, 1, 1);
    let arena = |g: &Graph| g.edges.iter().map(|s| s.arena.len()).sum::<usize>();
    let uses = arena(&g);
    assert!(uses > 0);

    // Replayed from the store into a fresh graph: still one copy.
    let changes = g.take_changes();
    assert_eq!(changes.edges.len(), 50);
    let mut h = Graph::new(i.clone());
    for v in &changes.nodes {
        h.load_node(&v.row);
    }
    assert_eq!(h.load_edges(&changes.edges), 0, "no edge dangles");
    assert_eq!(h.edge_rows(), 50);
    assert_eq!(arena(&h), uses, "loaded edges share their properties");

    // Fifty inferred edges naming the same rule: one more copy, of theirs.
    let mut rule = Vec::new();
    PropWriter::new(&mut rule).str(i.intern("inferred_by"), "linker");
    let inferred: Vec<InferredEdge> = vols
        .iter()
        .map(|v| InferredEdge {
            src: find(&h, &vm),
            dst: find(&h, v),
            rel: Relation::FlowsTo,
            props: rule.clone(),
        })
        .collect();
    let st = h.upsert_inferred_edges(&inferred, 2, 2);
    assert_eq!(st.inserted, 50);
    assert_eq!(
        arena(&h),
        uses + 1 + rule.len(),
        "inferred edges share theirs (and its length's byte)"
    );
    let by = h
        .find_edge(find(&h, &vm), find(&h, &vols[49]), Relation::FlowsTo)
        .and_then(|id| h.edge(id))
        .and_then(|e| {
            e.props()
                .get(i.intern("inferred_by"))
                .and_then(|v| v.as_str().map(str::to_owned))
        });
    assert_eq!(by.as_deref(), Some("linker"));
}

/// A node found in two steps (segments first, the id compared after) is
/// the one found in one, also when another node with the same segments
/// comes first in the index.
#[test]
fn endpoints_found_in_two_steps_are_those_found_in_one() {
    let i = Arc::new(Interner::new());
    let mut e = Estate::new(i.clone());
    let n = 20_000;
    for k in 0..n {
        e.node(&crn("volume", &format!("vol-{k}")), "available", 1.0);
    }
    let mut g = Graph::new(i.clone());
    g.ingest_nodes(&[std::mem::take(&mut e.nodes)], 1, 1);
    let mut looked_further = 0;
    for k in 0..n + 100 {
        let c = Crn::parse(&crn("volume", &format!("vol-{k}"))).unwrap();
        let key = NodeKeyRef::intern(&i, &c);
        let (hash, syms, id) = (key.hash(), key.syms(), key.id.as_bytes());
        let shard = &g.nodes[node_shard_of(hash)];
        let start = shard.find_start(hash, &syms);
        let found = shard.find_end(start, hash, &syms, id);
        assert_eq!(found, shard.find(hash, &syms, id), "vol-{k}");
        assert_eq!(found.is_some(), k < n, "vol-{k}");
        looked_further += usize::from(start.is_some() && start != found);
    }
    assert!(looked_further > 0, "no lookup met another node first");
}

/// Scan `scan` of a churning estate: 200 volumes of which the oldest 10
/// are gone each scan and 10 new ones appear, each attached to one of
/// 20 long-lived instances. Returns the CRNs of the volumes reported.
fn churn_scan(g: &mut Graph, i: &Arc<Interner>, scan: u32) -> Vec<String> {
    let mut e = Estate::new(i.clone());
    let now = u64::from(scan) * 1_000;
    for k in 0..20 {
        e.node(&crn("instance", &format!("i-{k}")), "running", 50.0);
    }
    let first = scan * 10;
    let mut vols = Vec::new();
    for v in first..first + 200 {
        let c = crn("volume", &format!("vol-{v}"));
        e.node(&c, "in-use", 4.0)
            .edge(&c, &crn("instance", &format!("i-{}", v % 20)), Relation::AttachedTo);
        vols.push(c);
    }
    e.scan_into(g, now, scan);
    g.retire_unseen(&[i.intern("aws")], now, scan);
    g.take_changes();
    g.rebuild_adjacency(now);
    vols
}

#[test]
fn compaction_keeps_the_rows_near_the_live_count_while_resources_churn() {
    let i = Arc::new(Interner::new());
    let mut g = Graph::new(i.clone());
    let mut compactions = 0;
    for scan in 1..=100 {
        let now = u64::from(scan) * 1_000;
        let vols = churn_scan(&mut g, &i, scan);
        if g.compaction_due(now, 16) {
            let c = g.compact(now);
            assert!(c.nodes_dropped > 0 && c.edges_dropped > 0);
            compactions += 1;
        }
        // 220 live nodes and 200 live edges throughout.
        let st = g.stats(now);
        assert_eq!((st.active_nodes, st.total_edges), (220, 200), "scan {scan}");
        assert!(
            g.node_rows() <= 220 + 220 / 8 + 10,
            "scan {scan}: {} node rows",
            g.node_rows()
        );
        assert!(
            g.edge_rows() <= 200 + 200 / 8 + 20,
            "scan {scan}: {} edge rows",
            g.edge_rows()
        );
        // Every live resource is found, visible, with its edge.
        for (k, v) in vols.iter().enumerate() {
            let id = find(&g, v);
            assert!(g.is_node_visible(id, now));
            assert_eq!(g.node(id).unwrap().crn(), *v);
            let inst = find(&g, &crn("instance", &format!("i-{}", (scan * 10 + k as u32) % 20)));
            let out: Vec<NodeId> = g.neighbours(id, Relation::AttachedTo, true, now).collect();
            assert_eq!(out, vec![inst], "scan {scan}: {v}");
        }
    }
    assert!(compactions >= 10, "{compactions} compactions");
    // Without compaction the rows grow with every scan.
    let mut grown = Graph::new(i.clone());
    for scan in 1..=100 {
        churn_scan(&mut grown, &i, scan);
    }
    assert_eq!(grown.node_rows(), 220 + 99 * 10);
}

#[test]
fn ids_taken_before_a_compaction_name_nothing_after_it() {
    let i = Arc::new(Interner::new());
    let mut g = Graph::new(i.clone());
    churn_scan(&mut g, &i, 1);
    let before: Vec<(NodeId, String)> = g.nodes().map(|n| (n.id(), n.crn())).collect();
    for scan in 2..=5 {
        churn_scan(&mut g, &i, scan);
    }
    let c = g.compact(5_000);
    assert_eq!((c.nodes_dropped, c.edges_dropped), (40, 40));
    let mut stale = 0;
    for (id, crn) in &before {
        let shard = id.shard();
        if c.kept[shard].is_some() {
            stale += 1;
            assert!(g.node(*id).is_none(), "{crn}: a stale id resolves");
        } else {
            // A shard left as it was keeps its ids.
            assert_eq!(g.node(*id).map(|n| n.crn()), Some(crn.clone()));
        }
    }
    assert!(stale > 0);
    // Retired resources are gone from memory, live ones found by CRN.
    assert!(g.find(&Crn::parse(&crn("volume", "vol-10")).unwrap()).is_none());
    let live = find(&g, &crn("volume", "vol-50"));
    assert_eq!(g.node(live).unwrap().crn(), crn("volume", "vol-50"));
    // Compacting again drops nothing and renames nothing.
    let again = g.compact(5_000);
    assert!(again.is_empty() && again.kept.iter().all(Option::is_none));
    assert_eq!(g.node(live).unwrap().crn(), crn("volume", "vol-50"));
}

#[test]
fn compaction_keeps_uncommitted_rows_and_nodes_a_live_edge_names() {
    let i = Arc::new(Interner::new());
    let mut g = Graph::new(i.clone());
    let mut e = Estate::new(i.clone());
    let (a, b, c) = (crn("volume", "vol-a"), crn("instance", "i-b"), crn("volume", "vol-c"));
    e.node(&a, "in-use", 10.0)
        .node(&b, "running", 20.0)
        .node(&c, "available", 1.0);
    e.scan_into(&mut g, 100, 1);
    g.take_changes();
    // Scan 2: only `a` reported, with an edge to `b` that names it though
    // it is gone; `c` is retired but not committed yet.
    e.node(&a, "in-use", 10.0).edge(&a, &b, Relation::AttachedTo);
    e.scan_into(&mut g, 200, 2);
    g.retire_unseen(&[i.intern("aws")], 200, 2);
    // The edge is retired with its endpoint; pretend it came back alone.
    let eid = g.find_edge(find(&g, &a), find(&g, &b), Relation::AttachedTo).unwrap();
    g.edges[eid.shard()].valid_to[eid.row() as usize] = 0;
    let dropped = g.compact(300);
    assert_eq!((dropped.nodes_dropped, dropped.edges_dropped), (0, 0));
    assert!(g.find(&Crn::parse(&c).unwrap()).is_some(), "not committed yet");
    g.take_changes();
    let dropped = g.compact(300);
    assert_eq!((dropped.nodes_dropped, dropped.edges_dropped), (1, 0));
    assert!(g.find(&Crn::parse(&c).unwrap()).is_none());
    let (ia, ib) = (find(&g, &a), find(&g, &b));
    assert_eq!(
        g.find_edge(ia, ib, Relation::AttachedTo).map(|e| g.edge(e).is_some()),
        Some(true)
    );
    let e = g.edge(g.find_edge(ia, ib, Relation::AttachedTo).unwrap()).unwrap();
    assert_eq!((e.source(), e.target()), (ia, ib));
}

#[test]
fn a_compacted_graph_commits_and_loads_as_it_reads() {
    let i = Arc::new(Interner::new());
    let mut g = Graph::new(i.clone());
    for scan in 1..=6 {
        churn_scan(&mut g, &i, scan);
    }
    g.compact(6_000);
    let mut rows: Vec<(String, NodeRow)> = g.all_versions().nodes.into_iter().map(|v| (v.crn, v.row)).collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(rows.len(), 220);
    assert!(rows.iter().all(|(_, r)| r.valid_to == 0));
    let edges = g.all_versions().edges;
    assert_eq!(edges.len(), 200);
    // Loaded into a fresh graph, the rows read the same.
    let mut h = Graph::new(i.clone());
    h.load_nodes(&rows.iter().map(|r| r.1.clone()).collect::<Vec<_>>());
    assert_eq!(h.load_edges(&edges), 0);
    let mut again: Vec<(String, NodeRow)> = h.all_versions().nodes.into_iter().map(|v| (v.crn, v.row)).collect();
    again.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(again, rows);
}

#[test]
fn stages_land_on_their_rows_and_every_other_node_has_none() {
    let i = Arc::new(Interner::new());
    let mut g = Graph::new(i.clone());
    let mut e = Estate::new(i.clone());
    for n in 0..3000 {
        e.node(&crn("volume", &format!("vol-{n}")), "available", 1.0);
    }
    e.scan_into(&mut g, 1, 1);
    let ids: Vec<NodeId> = g.nodes().map(|n| n.id()).collect();
    let phase = |k: usize| [Phase::Flagged, Phase::Pending, Phase::Applied][k % 3];
    // Every other node has a stage; one id of an older generation names no row.
    let mut stages: Vec<(NodeId, Phase)> = ids
        .iter()
        .enumerate()
        .filter(|(k, _)| k % 2 == 0)
        .map(|(k, id)| (*id, phase(k)))
        .collect();
    let stale = ids[1];
    stages.push((
        NodeId::new(stale.shard(), stale.row(), stale.generation() + 1),
        Phase::Codegen,
    ));
    stages.reverse();
    assert_eq!(g.apply_phases(2, &mut stages), 1500);
    for (k, id) in ids.iter().enumerate() {
        let want = if k % 2 == 0 { phase(k) } else { Phase::None };
        assert_eq!(g.node(*id).unwrap().phase(), want, "{k}");
    }
    assert_eq!(g.apply_phases(3, &mut stages), 0, "nothing changes the second time");
    assert_eq!(g.apply_phases(4, &mut []), 1500);
    assert!(g.nodes().all(|n| n.phase() == Phase::None));
}

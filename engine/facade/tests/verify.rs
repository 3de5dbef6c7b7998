//! The ghost linker and formal verification on hand-built estates: each
//! linker rule finds its match and only it, inferred edges are marked and
//! retired when their match goes, reachability is the least fixpoint from
//! the entry points with a proof path for every reachable node, a failed
//! provider makes its nodes unknown, and removal risk and spot estimates
//! order resources as an operator would. Property tests: adding an edge
//! never makes a reachable node unreachable, and the result is closed under
//! every traffic-carrying step.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::{AWS, Estate, GCP, K8S, NOW};
use proptest::prelude::*;
use serde_json::json;
use svc_engine::analysis::linker::{self, INFERRED_BY};
use svc_engine::analysis::reach::{self, Via};
use svc_engine::graph::{NodeBatch, NodeInput, NodeKeyRef, Reachability};
use svc_engine::relation::Relation::{self, AttachedTo, Contains, FlowsTo, Runs, SecuredBy, Uses};
use svc_engine::{Crn, Graph, NodeId};

const NOW_US: u64 = NOW * 1_000_000;
const AZ: (&str, &str, &str) = ("azure", "westeurope", "sub-1");
const AZURE_VM: &str = "/subscriptions/sub-1/resourceGroups/MC_rg/providers/Microsoft.Compute/virtualMachines/aks-1";

fn estate() -> Estate {
    let mut e = Estate::new();
    let none = json!({});
    // A web stack behind DNS and a load balancer.
    e.node(
        AWS,
        "route53:record",
        "www",
        "active",
        0.5,
        100,
        json!({"record_value": "lb-1.elb.amazonaws.com"}),
        &[],
    );
    e.node(
        AWS,
        "elb:load-balancer",
        "lb",
        "active",
        18.0,
        100,
        json!({"dns_name": "lb-1.elb.amazonaws.com."}),
        &[],
    );
    e.node(
        AWS,
        "ec2:instance",
        "web",
        "running",
        70.0,
        100,
        json!({"instance_type": "m5.large"}),
        &[],
    );
    e.node(AWS, "ec2:volume", "vol-web", "in-use", 8.0, 100, none.clone(), &[]);
    e.node(AWS, "ec2:subnet", "subnet", "available", 0.0, 100, none.clone(), &[]);
    e.node(AWS, "ec2:vpc", "vpc", "available", 0.0, 100, none.clone(), &[]);
    e.node(
        AWS,
        "ec2:security-group",
        "sg-web",
        "active",
        0.0,
        100,
        none.clone(),
        &[],
    );
    e.node(AWS, "rds:db", "db", "available", 400.0, 100, none.clone(), &[]);
    e.edge("www", FlowsTo, "lb");
    e.edge("lb", FlowsTo, "web");
    e.edge("vol-web", AttachedTo, "web");
    e.edge("subnet", Contains, "web");
    e.edge("vpc", Contains, "subnet");
    e.edge("web", SecuredBy, "sg-web");
    e.edge("web", Uses, "db");
    // A forgotten batch machine and its disk; a bastion behind an address.
    e.node(
        AWS,
        "ec2:instance",
        "batch",
        "running",
        140.0,
        300,
        json!({"instance_type": "m5.xlarge"}),
        &[],
    );
    e.node(AWS, "ec2:volume", "vol-batch", "in-use", 50.0, 300, none.clone(), &[]);
    e.edge("vol-batch", AttachedTo, "batch");
    e.node(
        AWS,
        "ec2:eip",
        "eip-1",
        "in-use",
        3.6,
        100,
        json!({"public_ip": "52.0.0.9"}),
        &[],
    );
    e.node(
        AWS,
        "ec2:instance",
        "bastion",
        "running",
        7.0,
        100,
        json!({"instance_type": "t3.micro"}),
        &[],
    );
    e.edge("eip-1", AttachedTo, "bastion");
    // Spot machines, one accelerated; an on-demand twin of the first.
    let spot = json!({"instance_type": "p3.2xlarge", "lifecycle": "spot"});
    e.node(AWS, "ec2:instance", "gpu-spot", "running", 900.0, 10, spot, &[]);
    let twin = json!({"instance_type": "p3.2xlarge", "lifecycle": "on-demand"});
    e.node(AWS, "ec2:instance", "gpu-ondemand", "running", 900.0, 10, twin, &[]);
    // Kubernetes on all three clouds, named by providerID only.
    e.node(
        AWS,
        "ec2:instance",
        "i-k8s",
        "running",
        70.0,
        50,
        json!({"instance_type": "m5.large"}),
        &[],
    );
    let gce = json!({"name": "gke-pool-x", "machine_type": "n2-standard-4"});
    e.node(GCP, "compute:instance", "4242", "RUNNING", 97.0, 50, gce, &[]);
    e.node(
        AZ,
        "compute:vm",
        AZURE_VM,
        "running",
        70.0,
        50,
        json!({"vm_size": "Standard_D2s_v5"}),
        &[],
    );
    let aws_pid = json!({"provider_id": "aws:///us-east-1a/i-k8s"});
    e.node(K8S, "core:node", "ip-10-0-0-1", "Ready", 0.0, 50, aws_pid, &[]);
    let gce_pid = json!({"provider_id": "gce://proj-1/europe-west1-b/gke-pool-x"});
    e.node(K8S, "core:node", "gke-pool-x", "Ready", 0.0, 50, gce_pid, &[]);
    let az_pid = json!({"provider_id": format!("azure://{}", AZURE_VM.to_ascii_lowercase())});
    e.node(K8S, "core:node", "aks-1", "Ready", 0.0, 50, az_pid, &[]);
    let lb_svc = json!({"service_type": "LoadBalancer"});
    e.node(K8S, "core:service", "svc-lb", "active", 0.0, 50, lb_svc, &[]);
    e.node(
        K8S,
        "core:service",
        "svc-internal",
        "active",
        0.0,
        50,
        json!({"service_type": "ClusterIP"}),
        &[],
    );
    e.node(K8S, "core:pod", "pod-a", "Running", 0.0, 5, none.clone(), &[]);
    e.node(K8S, "core:pod", "pod-b", "Running", 0.0, 5, none.clone(), &[]);
    e.edge("svc-lb", FlowsTo, "pod-a");
    e.edge("svc-internal", FlowsTo, "pod-b");
    e.edge("pod-a", Runs, "ip-10-0-0-1");
    e.edge("pod-b", Runs, "gke-pool-x");
    // DNS on AWS naming a GCP address, which fronts a Kubernetes service.
    e.node(
        AWS,
        "route53:record",
        "api",
        "active",
        0.5,
        100,
        json!({"record_value": "34.1.2.3"}),
        &[],
    );
    let addr = json!({"address": "34.1.2.3", "address_type": "EXTERNAL"});
    e.node(GCP, "compute:address", "addr-1", "IN_USE", 7.3, 100, addr, &[]);
    let ext = json!({"service_type": "ClusterIP", "external_ip": "34.1.2.3"});
    e.node(K8S, "core:service", "svc-ext", "active", 0.0, 50, ext, &[]);
    // A role and the function that assumes it.
    let arn = "arn:aws:iam::123456789012:role/app";
    e.node(AWS, "iam:role", arn, "active", 0.0, 100, json!({}), &[]);
    e.node(
        AWS,
        "lambda:function",
        "fn-1",
        "Active",
        1.0,
        100,
        json!({"role_arn": arn}),
        &[],
    );
    e
}

fn id(g: &Graph, crns: &BTreeMap<&'static str, String>, name: &str) -> NodeId {
    g.find(&Crn::parse(&crns[name]).expect("crn")).expect(name)
}

fn name_of(crns: &BTreeMap<&'static str, String>, g: &Graph, id: NodeId) -> &'static str {
    let crn = g.crn(id);
    crns.iter().find(|(_, c)| **c == crn).map(|(n, _)| *n).unwrap_or("?")
}

#[test]
fn each_linker_rule_finds_its_match_and_only_it() {
    let (g, crns) = estate().graph();
    let found: BTreeSet<(&str, &str, &str, &str)> = linker::find(&g, NOW_US)
        .into_iter()
        .map(|(s, d, rel, rule)| (name_of(&crns, &g, s), name_of(&crns, &g, d), rel.name(), rule))
        .collect();
    let arn = "arn:aws:iam::123456789012:role/app";
    let want: BTreeSet<(&str, &str, &str, &str)> = [
        ("ip-10-0-0-1", "i-k8s", "Runs", "k8s-provider-id"),
        ("gke-pool-x", "4242", "Runs", "k8s-provider-id"),
        ("aks-1", AZURE_VM, "Runs", "k8s-provider-id"),
        ("www", "lb", "FlowsTo", "dns-target"),
        ("api", "addr-1", "FlowsTo", "dns-target"),
        (arn, "fn-1", "Grants", "role-assume"),
        ("addr-1", "svc-ext", "FlowsTo", "shared-ip"),
    ]
    .into_iter()
    .collect();
    assert_eq!(found, want);
}

#[test]
fn inferred_edges_are_marked_kept_and_retired() {
    let e = estate();
    let interner = e.interner.clone();
    let (mut g, crns) = e.graph();
    // The facts of each run are kept for the next, as a scan keeps them.
    let mut cache = linker::Cache::default();
    let first = linker::run_with(&mut cache, &mut g, NOW_US, 2);
    // www -> lb is reported by the provider; the six others are new.
    assert_eq!(first.added, 6, "{first:?}");
    assert_eq!(first.matched(), 7);
    let dns = first.rules.iter().find(|r| r.rule == "dns-target").expect("rule");
    assert_eq!((dns.matched, dns.reported), (2, 1));
    g.rebuild_adjacency(NOW_US);
    let node = g.node(id(&g, &crns, "ip-10-0-0-1")).expect("node");
    let runs: Vec<_> = node.out_edges().filter(|e| e.relation() == Runs).collect();
    assert_eq!(runs.len(), 1);
    assert!(runs[0].inferred());
    let key = interner.get(INFERRED_BY).expect("interned");
    assert_eq!(
        runs[0].props().get(key).and_then(|v| v.as_str().map(str::to_owned)),
        Some("k8s-provider-id".to_owned())
    );
    let reported = g
        .node(id(&g, &crns, "www"))
        .expect("node")
        .out_edges()
        .find(|e| e.relation() == FlowsTo)
        .expect("edge");
    assert!(!reported.inferred(), "a provider's edge stays as reported");

    // The next scan finds the same: nothing added, nothing retired.
    let again = linker::run_with(&mut cache, &mut g, NOW_US + 10, 3);
    assert_eq!((again.added, again.retired), (0, 0));
    assert_eq!(cache.read, 0, "nothing changed, nothing is read again");

    // The Kubernetes node moves to another machine: its old edge goes.
    let mut batch = NodeBatch::default();
    let crn = Crn::parse(&crns["ip-10-0-0-1"]).expect("crn");
    let input = NodeInput {
        key: NodeKeyRef::intern(&interner, &crn),
        ty: interner.intern("core:node"),
        state: interner.intern("Ready"),
        cost_usd_mo: 0.0,
        creation_ts: NOW - 50 * 86_400,
    };
    let pid = interner.intern("provider_id");
    batch.push(input, &[], |w| w.str(pid, "aws:///us-east-1a/i-gone"));
    g.ingest_nodes(&[batch], NOW_US + 20, 4);
    let moved = linker::run_with(&mut cache, &mut g, NOW_US + 20, 4);
    assert_eq!((moved.added, moved.retired), (0, 1));
    assert_eq!(cache.read, 1, "only the node that moved is read again");
    g.rebuild_adjacency(NOW_US + 20);
    let node = g.node(id(&g, &crns, "ip-10-0-0-1")).expect("node");
    assert_eq!(node.out_edges().filter(|e| e.relation() == Runs).count(), 0);
}

fn verified(failed: &[&str]) -> (Graph, BTreeMap<&'static str, String>, reach::Assessment) {
    let (mut g, crns) = estate().graph();
    linker::run(&mut g, NOW_US, 2);
    g.rebuild_adjacency(NOW_US);
    let failed: Vec<_> = failed.iter().filter_map(|p| g.interner().get(p)).collect();
    let a = reach::run(&g, NOW_US, 2, &failed);
    g.apply_assessment(NOW_US, |id| a.verdict(id));
    (g, crns, a)
}

#[test]
fn reachability_is_the_least_fixpoint_from_entry_points() {
    let (g, crns, a) = verified(&[]);
    let reach = |name: &str| g.node(id(&g, &crns, name)).expect("node").reachability();
    for name in [
        "www",
        "lb",
        "web",
        "vol-web",
        "subnet",
        "vpc",
        "db",
        "eip-1",
        "bastion",
        "svc-lb",
        "pod-a",
        "ip-10-0-0-1",
        "i-k8s",
        "api",
        "addr-1",
        "svc-ext",
    ] {
        assert_eq!(reach(name), Reachability::Reachable, "{name}");
    }
    for name in [
        "batch",
        "vol-batch",
        "sg-web",
        "svc-internal",
        "pod-b",
        "gke-pool-x",
        "4242",
        "gpu-spot",
        "fn-1",
    ] {
        assert_eq!(reach(name), Reachability::Unreachable, "{name}");
    }
    assert_eq!(a.entry_points, 6, "www, lb, eip-1, svc-lb, api, addr-1");
    assert_eq!(a.via(id(&g, &crns, "lb")), Via::Entry);

    // The proof of the database: DNS, load balancer, machine, database.
    let proof: Vec<(&str, &str, &str)> = a
        .proof(&g, id(&g, &crns, "db"))
        .into_iter()
        .map(|(e, from, to)| {
            let rel = g.edge(e).expect("edge").relation().name();
            (name_of(&crns, &g, from), rel, name_of(&crns, &g, to))
        })
        .collect();
    // The load balancer is an entry point itself: the shortest proof starts there.
    assert_eq!(proof, [("lb", "FlowsTo", "web"), ("web", "Uses", "db")]);
    // A volume is reached from its machine, against the edge's direction.
    let vol = a.proof(&g, id(&g, &crns, "vol-web"));
    assert_eq!(vol.len(), 2);
    assert_eq!(name_of(&crns, &g, vol[1].1), "web");
    // Through an inferred edge: the GCP address fronting a service.
    let ext = a.proof(&g, id(&g, &crns, "svc-ext"));
    assert_eq!(ext.len(), 1);
    assert_eq!(name_of(&crns, &g, ext[0].1), "addr-1");
    assert!(g.edge(ext[0].0).expect("edge").inferred());
}

#[test]
fn a_failed_provider_makes_what_is_not_proven_unknown() {
    let (g, crns, a) = verified(&["gcp"]);
    let reach = |name: &str| g.node(id(&g, &crns, name)).expect("node").reachability();
    // Reached nodes stay reached, whoever's they are.
    assert_eq!(reach("addr-1"), Reachability::Reachable);
    // Not reached and of the failed provider, or joined to it: unknown.
    assert_eq!(reach("4242"), Reachability::Unknown);
    assert_eq!(reach("gke-pool-x"), Reachability::Unknown, "runs on a GCP machine");
    // Unrelated nodes keep a definite answer.
    assert_eq!(reach("batch"), Reachability::Unreachable);
    assert_eq!(a.failed_providers, ["gcp"]);
    assert_eq!(a.reachable + a.unreachable + a.unknown, g.nodes().count() as u64);
}

#[test]
fn removal_risk_orders_resources_as_an_operator_would() {
    let (g, crns, _) = verified(&[]);
    let risk = |name: &str| g.node(id(&g, &crns, name)).expect("node").risk_score();
    for name in crns.keys() {
        assert!((0.0..=100.0).contains(&risk(name)), "{name}: {}", risk(name));
    }
    // A reached database that a machine uses outranks everything idle.
    assert!(risk("db") > risk("batch"), "{} vs {}", risk("db"), risk("batch"));
    assert!(risk("vol-web") > risk("vol-batch"), "a reached volume is riskier");
    assert!(risk("web") > risk("batch"));
    // The forgotten batch machine: unreachable, nothing depends on it; its
    // volume holds data and the machine depends on it.
    let parts = reach::explain(&g, id(&g, &crns, "batch"), Reachability::Unreachable)
        .expect("node")
        .0;
    assert_eq!((parts.reachability, parts.stateful, parts.dependents), (0.0, 0.0, 0));
    assert_eq!(parts.total, risk("batch"));
    let parts = reach::explain(&g, id(&g, &crns, "vol-batch"), Reachability::Unreachable)
        .expect("node")
        .0;
    assert_eq!((parts.stateful, parts.dependents, parts.blast), (20.0, 1, 10.0));
    assert_eq!(parts.total, risk("vol-batch"));
    // Spot: the same machine bought as spot is less risky to remove.
    assert!(risk("gpu-spot") < risk("gpu-ondemand"));
    let (_, spot, _) = reach::explain(&g, id(&g, &crns, "gpu-spot"), Reachability::Unreachable).expect("node");
    let spot = spot.expect("a spot machine");
    assert_eq!((spot.band, spot.frequency), (4, ">20%"));
    assert_eq!(spot.machine_type.as_deref(), Some("p3.2xlarge"));
    let on_demand = reach::explain(&g, id(&g, &crns, "gpu-ondemand"), Reachability::Unreachable).expect("node");
    assert!(on_demand.1.is_none());
}

// --- Properties -----------------------------------------------------------

const KINDS: [&str; 5] = ["ec2:eip", "ec2:instance", "ec2:volume", "ec2:subnet", "rds:db"];
const RELS: [Relation; 7] = [AttachedTo, SecuredBy, Contains, Runs, FlowsTo, Relation::Grants, Uses];

fn random_graph(kinds: &[usize], edges: &[(usize, usize, usize)]) -> Graph {
    let mut e = Estate::new();
    let names: Vec<&'static str> = (0..kinds.len())
        .map(|i| &*Box::leak(format!("n{i}").into_boxed_str()))
        .collect();
    for (i, k) in kinds.iter().enumerate() {
        e.node(AWS, KINDS[*k], names[i], "running", 10.0, 10, json!({}), &[]);
    }
    for &(a, b, r) in edges {
        e.edge(names[a % kinds.len()], RELS[r], names[b % kinds.len()]);
    }
    e.graph().0
}

fn reachable(g: &Graph) -> BTreeSet<String> {
    let a = reach::run(g, NOW_US, 1, &[]);
    g.nodes()
        .filter(|n| a.verdict(n.id()).0 == Reachability::Reachable)
        .map(|n| n.crn())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn adding_an_edge_never_makes_a_reachable_node_unreachable(
        kinds in prop::collection::vec(0usize..5, 2..30),
        edges in prop::collection::vec((0usize..30, 0usize..30, 0usize..7), 0..60),
        extra in (0usize..30, 0usize..30, 0usize..7),
    ) {
        let before = reachable(&random_graph(&kinds, &edges));
        let mut more = edges.clone();
        more.push(extra);
        let after = reachable(&random_graph(&kinds, &more));
        prop_assert!(before.is_subset(&after), "lost: {:?}", before.difference(&after).collect::<Vec<_>>());
    }

    #[test]
    fn the_result_is_closed_and_every_reached_node_has_a_proof(
        kinds in prop::collection::vec(0usize..5, 2..30),
        edges in prop::collection::vec((0usize..30, 0usize..30, 0usize..7), 0..60),
    ) {
        let g = random_graph(&kinds, &edges);
        let a = reach::run(&g, NOW_US, 1, &[]);
        let is_reached = |id: NodeId| a.verdict(id).0 == Reachability::Reachable;
        let is_entry = |id: NodeId| a.via(id) == Via::Entry;
        for e in g.edges() {
            let (s, t) = (e.source(), e.target());
            let forward = matches!(e.relation(), FlowsTo | Uses | Runs) || (e.relation() == AttachedTo && is_entry(s));
            let backward = matches!(e.relation(), AttachedTo | Contains);
            if forward && is_reached(s) {
                prop_assert!(is_reached(t), "{:?} from a reached source", e.relation());
            }
            if backward && is_reached(t) {
                prop_assert!(is_reached(s), "{:?} to a reached target", e.relation());
            }
        }
        for n in g.nodes() {
            let entry = &*g.interner().resolve(n.ty()) == "ec2:eip";
            prop_assert_eq!(is_entry(n.id()), entry);
            if is_reached(n.id()) && !entry {
                let proof = a.proof(&g, n.id());
                prop_assert!(!proof.is_empty());
                prop_assert!(is_entry(proof[0].1), "a proof starts at an entry point");
                prop_assert_eq!(proof.last().map(|p| p.2), Some(n.id()));
                for w in proof.windows(2) {
                    prop_assert_eq!(w[0].2, w[1].1, "a proof is a chain");
                }
            }
        }
    }
}

#[test]
fn traffic_waits_for_a_running_scan_and_names_what_it_cannot_resolve() {
    use svc_engine::analysis::traffic::FlowRecord;
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = std::sync::Arc::new(svc_engine::clock::ManualClock::new(NOW_US));
    let engine = std::sync::Arc::new(svc_engine::Engine::open(dir.path(), "s1", clock).expect("open"));
    let flow = FlowRecord {
        source: "10.0.0.1".into(),
        destination: "10.0.0.2".into(),
        bytes: 10,
        packets: 1,
        start_s: NOW - 60,
        end_s: NOW,
    };
    let permit = engine.try_start_scan().expect("no scan running");
    let busy = engine.ingest_traffic(std::slice::from_ref(&flow), Default::default());
    assert!(matches!(busy, Ok(None)), "refused while a scan runs");
    drop(permit);
    let report = engine
        .ingest_traffic(&[flow], Default::default())
        .expect("ingest")
        .expect("no scan running");
    assert_eq!((report.records, report.resolved, report.unresolved), (1, 0, 1));
    assert_eq!(report.errors, ["no live resource carries 10.0.0.1"]);
    assert_eq!(report.edges_added, 0);
}

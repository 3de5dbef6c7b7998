//! Policy rules: a known answer for every binding, the fast path against
//! the interpreter on random estates and conditions, and the phase inside
//! a real scan (flag, block, warn, shadow, errors, persistence).

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::sync::Arc;

use common::{AWS, Estate, GCP, NOW};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use serde_json::json;
use svc_engine::clock::ManualClock;
use svc_engine::graph::{EdgeBatch, NodeBatch, NodeInput, NodeKeyRef, Verdict};
use svc_engine::policy::compile::compile;
use svc_engine::policy::eval::{EvalOptions, EvalRule, Outcome, check_node, evaluate};
use svc_engine::policy::{Action, Mode, PolicyError, RuleSpec};
use svc_engine::scan::{ScanContext, ScanSink, Source, SourceError};
use svc_engine::{Crn, Engine, Graph, NodeId, Relation};

fn opts() -> EvalOptions {
    EvalOptions {
        now_us: NOW * 1_000_000,
        as_of_s: NOW,
        hit_limit: usize::MAX,
        ..EvalOptions::default()
    }
}

/// Both paths on one node; they must agree. `None` from the fast path
/// means it deferred (or the condition has no predicate).
fn outcome(g: &Graph, cond: &str, id: NodeId) -> Outcome {
    let c = compile(cond).unwrap_or_else(|e| panic!("{cond}: {e}"));
    let slow = check_node(g, &c, id, &opts(), false).expect("node");
    if let Some(fast) = check_node(g, &c, id, &opts(), true) {
        assert_eq!(
            std::mem::discriminant(&fast),
            std::mem::discriminant(&slow),
            "{cond}: fast {fast:?} vs interpreter {slow:?}"
        );
    }
    slow
}

fn is(g: &Graph, cond: &str, id: NodeId) -> bool {
    match outcome(g, cond, id) {
        Outcome::Match => true,
        Outcome::NoMatch => false,
        Outcome::Error(e) => panic!("{cond}: error {e}"),
    }
}

fn errs(g: &Graph, cond: &str, id: NodeId) -> bool {
    matches!(outcome(g, cond, id), Outcome::Error(_))
}

fn small() -> (Graph, NodeId, NodeId, NodeId) {
    let mut e = Estate::new();
    e.node(
        AWS,
        "ec2:volume",
        "vol-1",
        "available",
        12.5,
        40,
        json!({"state": "available", "size_gb": 100, "iops": 3.5, "encrypted": false, "attachments": [], "nothing": null}),
        &[("env", "prod"), ("owner", "alice")],
    );
    e.node(AWS, "ec2:instance", "i-1", "running", 70.0, 3, json!({"cpu": 2}), &[]);
    e.node(
        GCP,
        "compute:disk",
        "d-1",
        "READY",
        4.0,
        0,
        json!({}),
        &[("env", "dev")],
    );
    e.edge("vol-1", Relation::AttachedTo, "i-1");
    e.edge("i-1", Relation::Uses, "d-1");
    e.edge("vol-1", Relation::Uses, "d-1");
    let (mut g, crns) = e.graph();
    let id = |n: &str| g.find(&Crn::parse(&crns[n]).unwrap()).unwrap();
    let (v, i, d) = (id("vol-1"), id("i-1"), id("d-1"));
    let rule = g.interner().intern("aws-ebs-unattached");
    g.set_verdict(
        v,
        &Verdict {
            is_waste: true,
            reason: "unattached",
            rule: Some(rule),
        },
        NOW * 1_000_000,
    );
    (g, v, i, d)
}

#[test]
fn every_binding_has_a_known_answer() {
    let (g, v, i, d) = small();
    // crn, type, kind, service, provider, region, account, state
    assert!(is(
        &g,
        "crn == 'crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-1'",
        v
    ));
    assert!(is(&g, "crn.endsWith(':vol-1') && crn.startsWith('crn:svc:aws:')", v));
    assert!(is(&g, "type == 'ec2:volume'", v) && !is(&g, "type == 'ec2:volume'", i));
    assert!(is(&g, "kind == 'disk' && service == 'compute'", d));
    assert!(is(
        &g,
        "provider == 'gcp' && region == 'europe-west1' && account == 'proj-1'",
        d
    ));
    assert!(is(&g, "state == 'available'", v) && is(&g, "state in ['running', 'stopped']", i));
    // cost (double), age_days (int), is_waste, risk_score, reachability
    assert!(is(&g, "cost == 12.5 && cost > 12 && cost < 13u", v));
    assert!(is(&g, "age_days == 40 && age_days >= 40.0", v) && is(&g, "age_days == 0", d));
    assert!(is(&g, "is_waste", v) && is(&g, "!is_waste", i));
    assert!(is(&g, "risk_score == 0.0", v));
    assert!(is(&g, "reachability == 'unknown'", v));
    // tags
    assert!(is(&g, "tags.env == 'prod' && tags['owner'] == 'alice'", v));
    assert!(is(&g, "has(tags.owner)", v) && !is(&g, "has(tags.owner)", d));
    assert!(errs(&g, "tags.owner == 'alice'", d), "a missing tag is an error");
    // props, JSON types kept
    assert!(is(
        &g,
        "props.state == 'available' && props.size_gb == 100 && props.size_gb > 99.5",
        v
    ));
    assert!(is(
        &g,
        "props.iops == 3.5 && !props.encrypted && props.nothing == null",
        v
    ));
    assert!(is(&g, "props.attachments == [] && size(props.attachments) == 0", v));
    assert!(errs(&g, "props.x > 3", v), "a missing key is an error");
    assert!(errs(&g, "props.state > 3", v), "no ordering between string and int");
    assert!(is(&g, "props.state != 3", v), "different types are unequal");
    // out / incoming
    assert!(is(&g, "out['AttachedTo'] == 1 && out.Uses == 1 && out['Runs'] == 0", v));
    assert!(is(&g, "incoming.AttachedTo == 1 && incoming['Uses'] == 0", i));
    assert!(is(&g, "incoming.Uses == 2", d));
    assert!(errs(&g, "out['Bogus'] == 0", v));
    // The issue's example.
    let example = "kind == \"volume\" && props.state == \"available\" && out[\"AttachedTo\"] == 0";
    assert!(!is(&g, example, v), "attached");
}

#[test]
fn errors_follow_cel_semantics() {
    let (g, v, _, _) = small();
    assert!(!is(&g, "false && props.x > 3", v));
    assert!(!is(&g, "props.x > 3 && false", v), "error && false is false");
    assert!(is(&g, "true || props.x > 3", v));
    assert!(is(&g, "props.x > 3 || true", v), "error || true is true");
    assert!(errs(&g, "props.x > 3 || false", v));
    assert!(errs(&g, "props.x > 3 && true", v));
    assert!(errs(&g, "!(props.x > 3)", v));
    assert!(errs(&g, "kind", v), "a non-boolean result is an error");
    assert!(errs(&g, "props.state && true", v));
    assert!(errs(&g, "9223372036854775807 + props.size_gb > 0", v), "overflow");
    assert!(errs(&g, "props.nothing < 1", v));
    assert!(is(&g, "kind in ['volume', 1]", v));
}

// ---------------------------------------------------------------------------
// The fast path against the interpreter.

const KINDS: [(&str, &str); 4] = [
    ("ec2:volume", "vol"),
    ("ec2:instance", "i"),
    ("s3:bucket", "b"),
    ("compute:disk", "d"),
];
const PROP_KEYS: [&str; 5] = ["size", "name", "flag", "list", "x"];
const NAMES: [&str; 40] = [
    "n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "n10", "n11", "n12", "n13", "n14", "n15", "n16", "n17",
    "n18", "n19", "n20", "n21", "n22", "n23", "n24", "n25", "n26", "n27", "n28", "n29", "n30", "n31", "n32", "n33",
    "n34", "n35", "n36", "n37", "n38", "n39",
];

#[test]
fn macros_times_and_the_cost_budget_on_nodes() {
    let (g, v, i, d) = small();
    // Comprehensions over the node's maps and JSON values; the fast path
    // defers them and both paths agree.
    assert!(is(&g, "tags.exists(k, k == 'owner') && tags.all(k, tags[k] != '')", v));
    assert!(is(&g, "tags.exists_one(k, tags[k] == 'prod')", v));
    assert!(is(&g, "props.filter(k, k.startsWith('s')).size() == 2", v));
    assert!(is(&g, "props.map(k, k).exists(k, k == 'iops')", v));
    assert!(is(&g, "props.attachments.all(a, a > 0)", v), "vacuously true");
    assert!(is(&g, "out.exists(r, out[r] > 0)", v));
    assert!(errs(&g, "props.state.all(c, c == 'a')", v), "a string is not a range");
    // Times: `created` from the creation time, `now` the pass's time.
    assert!(is(&g, "now - created == duration('960h')", v), "40 days old");
    assert!(is(&g, "now - created > duration('720h') && created < now", v));
    assert!(!is(&g, "now - created > duration('720h')", i));
    assert!(is(&g, "now == timestamp(int(now)) && now.getFullYear() >= 2020", d));
    assert!(is(
        &g,
        "created.getDayOfWeek('UTC') == created.getDayOfWeek() && now.getHours('+05:30') >= 0",
        v
    ));

    // A rule close to the budget at the largest sizes compiles; a node with
    // more tags than the graph should hold is over it: an evaluation error,
    // not a long evaluation.
    let mut terms = vec!["k != ''".to_owned()];
    let mut cond = String::new();
    loop {
        let next = format!("tags.all(k, {})", terms.join(" && "));
        match compile(&next) {
            Ok(_) => cond = next,
            Err(e) => {
                assert!(e.message.contains("over the budget of 5000000"), "{e}");
                break;
            }
        }
        terms.push(format!("k != 'x{}'", terms.len()));
    }
    assert!(!cond.is_empty());
    assert!(is(&g, &cond, v), "a node of ordinary size runs");
    let mut e = Estate::new();
    let names: Vec<String> = (0..60_000).map(|n| format!("t{n}")).collect();
    let tags: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "v")).collect();
    e.node(AWS, "ec2:volume", "vol-big", "available", 1.0, 1, json!({}), &tags);
    let (big, crns) = e.graph();
    let id = big.find(&Crn::parse(&crns["vol-big"]).unwrap()).unwrap();
    match outcome(&big, &cond, id) {
        Outcome::Error(m) => assert!(m.contains("over the budget of 5000000"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(
        is(&big, "size(tags) == 60000", id),
        "a rule without a comprehension still runs"
    );

    // Likewise a property array: a rule over one compiles at the largest
    // array ingest accepts, and runs on a node of ordinary size; on a node
    // holding a longer one (2,000,000 elements, past what a 256 KiB
    // properties document can carry) it is over the budget.
    let over_items = "props.items.all(x, x >= 0)";
    assert!(compile(over_items).is_ok());
    let mut e = Estate::new();
    e.node(
        AWS,
        "ec2:volume",
        "vol-few",
        "available",
        1.0,
        1,
        json!({"items": [1, 2, 3]}),
        &[],
    );
    let long: Vec<u8> = vec![0; 2_000_000];
    e.node(
        AWS,
        "ec2:volume",
        "vol-long",
        "available",
        1.0,
        1,
        json!({"items": long}),
        &[],
    );
    let (g2, crns) = e.graph();
    let few = g2.find(&Crn::parse(&crns["vol-few"]).unwrap()).unwrap();
    let long = g2.find(&Crn::parse(&crns["vol-long"]).unwrap()).unwrap();
    assert!(is(&g2, over_items, few));
    match outcome(&g2, over_items, long) {
        Outcome::Error(m) => assert!(m.contains("over the budget of 5000000"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(
        is(&g2, "size(props.items) == 2000000", long),
        "a rule without a comprehension still runs"
    );
}

fn prop_value() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        Just(json!(null)),
        any::<bool>().prop_map(|b| json!(b)),
        prop_oneof![Just(0i64), Just(3), Just(-1), Just(100), Just(i64::MAX)].prop_map(|i| json!(i)),
        prop_oneof![Just(0.5f64), Just(3.0), Just(-2.5), Just(1e300)].prop_map(|f| json!(f)),
        prop_oneof![Just(""), Just("available"), Just("prod"), Just("gp2"), Just("3")].prop_map(|s| json!(s)),
        Just(json!([1, 2])),
        Just(json!({"a": 1})),
    ]
}

#[derive(Clone, Debug)]
struct NodeSpec {
    kind: usize,
    aws: bool,
    state: &'static str,
    cost: f32,
    age: u64,
    props: Vec<(usize, serde_json::Value)>,
    tags: Vec<(&'static str, &'static str)>,
    waste: bool,
}

fn node_spec() -> impl Strategy<Value = NodeSpec> {
    (
        0..KINDS.len(),
        any::<bool>(),
        prop_oneof![Just("available"), Just("running"), Just("")],
        prop_oneof![Just(0.0f32), Just(1.5), Just(10.0), Just(99.99), Just(1e6)],
        prop_oneof![Just(0u64), Just(1), Just(30), Just(400)],
        proptest::collection::vec((0..PROP_KEYS.len() - 1, prop_value()), 0..4),
        proptest::collection::vec(
            (
                prop_oneof![Just("env"), Just("owner")],
                prop_oneof![Just("prod"), Just("dev"), Just("")],
            ),
            0..3,
        ),
        any::<bool>(),
    )
        .prop_map(|(kind, aws, state, cost, age, props, tags, waste)| NodeSpec {
            kind,
            aws,
            state,
            cost,
            age,
            props,
            tags,
            waste,
        })
}

fn operand() -> impl Strategy<Value = String> {
    let field = prop_oneof![
        Just("crn"),
        Just("type"),
        Just("kind"),
        Just("service"),
        Just("provider"),
        Just("region"),
        Just("account"),
        Just("state"),
        Just("reachability"),
        Just("cost"),
        Just("age_days"),
        Just("is_waste"),
        Just("risk_score"),
    ]
    .prop_map(str::to_owned);
    let entry = prop_oneof![
        (0..PROP_KEYS.len()).prop_map(|k| format!("props.{}", PROP_KEYS[k])),
        (0..PROP_KEYS.len()).prop_map(|k| format!("props[\"{}\"]", PROP_KEYS[k])),
        prop_oneof![Just("tags.env"), Just("tags['owner']"), Just("tags.team")].prop_map(str::to_owned),
        prop_oneof![
            Just("out['AttachedTo']"),
            Just("out.Uses"),
            Just("incoming.Uses"),
            Just("incoming['Contains']"),
            Just("out['Bogus']")
        ]
        .prop_map(str::to_owned),
    ];
    let lit = prop_oneof![
        Just("0"),
        Just("3"),
        Just("-1"),
        Just("100"),
        Just("9223372036854775807"),
        Just("5u"),
        Just("0u"),
        Just("0.5"),
        Just("3.0"),
        Just("10.0"),
        Just("-2.5"),
        Just("'volume'"),
        Just("'ec2:volume'"),
        Just("'aws'"),
        Just("'prod'"),
        Just("''"),
        Just("'available'"),
        Just("'crn:svc:aws'"),
        Just("'n1'"),
        Just("'1'"),
        Just("true"),
        Just("false"),
        Just("null"),
    ]
    .prop_map(str::to_owned);
    prop_oneof![field, entry, lit]
}

fn leaf() -> impl Strategy<Value = String> {
    let cmp = (
        operand(),
        prop_oneof![Just("=="), Just("!="), Just("<"), Just("<="), Just(">"), Just(">=")],
        operand(),
    )
        .prop_map(|(a, op, b)| format!("{a} {op} {b}"));
    let inlist = (operand(), proptest::collection::vec(operand(), 0..3)).prop_map(|(a, l)| {
        // Only literals in the list keep it on the fast path; the rest are
        // interpreted, which is fine too.
        format!("{a} in [{}]", l.join(", "))
    });
    let has = prop_oneof![
        (0..PROP_KEYS.len()).prop_map(|k| format!("has(props.{})", PROP_KEYS[k])),
        Just("has(tags.env)".to_owned()),
        Just("has(tags.team)".to_owned()),
        Just("has(out.Uses)".to_owned()),
        Just("has(incoming.Bogus)".to_owned()),
    ];
    let strf = (
        operand(),
        prop_oneof![Just("startsWith"), Just("endsWith"), Just("contains")],
        operand(),
    )
        .prop_map(|(a, f, b)| format!("{a}.{f}({b})"));
    prop_oneof![4 => cmp, 1 => inlist, 1 => has, 1 => strf, 1 => operand()]
}

fn condition() -> impl Strategy<Value = String> {
    leaf().prop_recursive(3, 12, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) && ({b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) || ({b})")),
            inner.prop_map(|a| format!("!({a})")),
        ]
    })
}

fn random_graph(specs: &[NodeSpec], edges: &[(usize, usize, usize)]) -> Graph {
    let mut e = Estate::new();
    for (n, s) in specs.iter().enumerate() {
        let (ty, _) = KINDS[s.kind];
        let mut props = serde_json::Map::new();
        for (k, v) in &s.props {
            props.insert(PROP_KEYS[*k].to_owned(), v.clone());
        }
        e.node(
            if s.aws { AWS } else { GCP },
            ty,
            NAMES[n],
            s.state,
            s.cost,
            s.age,
            serde_json::Value::Object(props),
            &s.tags,
        );
    }
    for &(a, b, r) in edges {
        if a < specs.len() && b < specs.len() && a != b {
            e.edge(NAMES[a], Relation::ALL[r], NAMES[b]);
        }
    }
    let (mut g, crns) = e.graph();
    let rule = g.interner().intern("some-rule");
    for (n, s) in specs.iter().enumerate() {
        if s.waste {
            let id = g.find(&Crn::parse(&crns[NAMES[n]]).unwrap()).unwrap();
            let v = Verdict {
                is_waste: true,
                reason: "r",
                rule: Some(rule),
            };
            g.set_verdict(id, &v, NOW * 1_000_000);
        }
    }
    g
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// On every node of a random estate, a random condition gives the same
    /// answer (match, no match, error) on the fast path as on the
    /// interpreter; and a whole pass gives the same counts and hits.
    #[test]
    fn fast_path_agrees_with_the_interpreter(
        specs in proptest::collection::vec(node_spec(), 1..NAMES.len()),
        edges in proptest::collection::vec((0..NAMES.len(), 0..NAMES.len(), 0..7usize), 0..30),
        conds in proptest::collection::vec(condition(), 1..6),
    ) {
        let g = random_graph(&specs, &edges);
        let compiled: Vec<_> = conds.iter().filter_map(|c| compile(c).ok()).collect();
        let o = opts();
        for (c, src) in compiled.iter().zip(&conds) {
            for n in g.nodes() {
                let slow = check_node(&g, c, n.id(), &o, false).unwrap();
                if let Some(fast) = check_node(&g, c, n.id(), &o, true) {
                    prop_assert_eq!(
                        std::mem::discriminant(&fast),
                        std::mem::discriminant(&slow),
                        "{} on {}: fast {:?}, interpreter {:?}", src, n.crn(), fast, slow
                    );
                }
            }
        }
        let rules: Vec<EvalRule<'_>> = compiled.iter().map(|c| EvalRule { compiled: c, collect_hits: true }).collect();
        let fast = evaluate(&g, &rules, &o);
        let slow = evaluate(&g, &rules, &EvalOptions { interpreter_only: true, ..o.clone() });
        // With no rule the pass only counts the visible nodes, the same ones.
        prop_assert_eq!(evaluate(&g, &[], &o).nodes, fast.nodes);
        prop_assert_eq!(slow.nodes, fast.nodes);
        for (f, s) in fast.rules.iter().zip(&slow.rules) {
            prop_assert_eq!(f.matches, s.matches);
            prop_assert_eq!(f.errors, s.errors);
            prop_assert_eq!(&f.hits, &s.hits);
            prop_assert_eq!(&f.by_type, &s.by_type);
        }
    }
}

#[test]
fn generated_conditions_mostly_take_the_fast_path() {
    // The differential test above proves something only if the fast path
    // answers: most generated conditions must compile to predicates.
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut fast, mut total) = (0, 0);
    for _ in 0..500 {
        let c = condition().new_tree(&mut runner).unwrap().current();
        if let Ok(c) = compile(&c) {
            total += 1;
            fast += usize::from(c.is_fast());
        }
    }
    assert!(total > 400 && fast * 10 > total * 8, "{fast} of {total} fast");
}

// ---------------------------------------------------------------------------
// The phase inside a scan.

struct Fixed {
    /// `(crn, type, state, cost, props)`
    nodes: Vec<(String, &'static str, &'static str, f32, serde_json::Value)>,
    edges: Vec<(usize, usize, Relation)>,
}

impl Source for Fixed {
    fn name(&self) -> &str {
        "aws"
    }
    fn providers(&self) -> Vec<String> {
        vec!["aws".into()]
    }
    fn scan(&mut self, ctx: &ScanContext<'_>, sink: &mut dyn ScanSink) -> Result<(), SourceError> {
        let i = ctx.interner;
        let mut nodes = NodeBatch::default();
        let crns: Vec<Crn> = self.nodes.iter().map(|n| Crn::parse(&n.0).unwrap()).collect();
        for (c, (_, ty, state, cost, props)) in crns.iter().zip(&self.nodes) {
            let input = NodeInput {
                key: NodeKeyRef::intern(i, c),
                ty: i.intern(ty),
                state: i.intern(state),
                cost_usd_mo: *cost,
                creation_ts: NOW - 100 * 86_400,
            };
            nodes.push(input, &[], |w| {
                for (k, v) in props.as_object().unwrap() {
                    match v {
                        serde_json::Value::String(s) => w.str(i.intern(k), s),
                        serde_json::Value::Number(n) => w.int(i.intern(k), n.as_i64().unwrap()),
                        _ => {}
                    }
                }
            });
        }
        let mut edges = EdgeBatch::default();
        for &(a, b, rel) in &self.edges {
            edges.push(
                NodeKeyRef::intern(i, &crns[a]),
                NodeKeyRef::intern(i, &crns[b]),
                rel,
                |_| {},
            );
        }
        sink.nodes(nodes);
        sink.edges(edges);
        Ok(())
    }
}

fn crn(kind: &str, id: &str) -> String {
    let service = if kind == "instance" || kind == "volume" {
        "ec2"
    } else {
        "s3"
    };
    format!("crn:svc:aws:us-east-1:{service}:{kind}:123456789012:{id}")
}

fn estate() -> Fixed {
    Fixed {
        nodes: vec![
            (
                crn("volume", "vol-a"),
                "ec2:volume",
                "in-use",
                8.0,
                json!({"state": "in-use", "volume_type": "gp3"}),
            ),
            (
                crn("volume", "vol-b"),
                "ec2:volume",
                "in-use",
                20.0,
                json!({"state": "in-use", "volume_type": "gp2"}),
            ),
            (
                crn("instance", "i-1"),
                "ec2:instance",
                "running",
                70.0,
                json!({"instance_type": "m5.large"}),
            ),
            (crn("bucket", "logs"), "s3:bucket", "active", 3.0, json!({})),
        ],
        edges: vec![(0, 2, Relation::AttachedTo), (1, 2, Relation::AttachedTo)],
    }
}

fn spec(id: &str, condition: &str, action: Action, mode: Mode) -> RuleSpec {
    RuleSpec {
        id: id.into(),
        condition: condition.into(),
        action,
        message: format!("{id} matched"),
        mode,
    }
}

fn open(dir: &std::path::Path) -> Arc<Engine> {
    let clock = Arc::new(ManualClock::new(NOW * 1_000_000));
    let e = Arc::new(Engine::open(dir, "s", clock).unwrap());
    e.set_sources(vec![Box::new(estate())]);
    e
}

fn node(e: &Engine, c: &str) -> NodeId {
    e.graph().find(&Crn::parse(c).unwrap()).unwrap()
}

#[test]
fn flag_block_warn_and_shadow_in_a_scan_and_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let e = open(dir.path());
    e.add_policies(
        &[
            spec(
                "gp2-volumes",
                "kind == 'volume' && props.volume_type == 'gp2'",
                Action::Flag,
                Mode::Enforcing,
            ),
            spec("keep-instances", "kind == 'instance'", Action::Block, Mode::Enforcing),
            spec("costly", "cost >= 20.0", Action::Warn, Mode::Enforcing),
            spec("shadow-flag", "type == 's3:bucket'", Action::Flag, Mode::Shadow),
            spec("broken", "props.volume_type == 'gp3'", Action::Warn, Mode::Enforcing),
            spec("interp", "size(props) == 0", Action::Warn, Mode::Shadow),
        ],
        "test",
    )
    .unwrap();
    let r = e.try_start_scan().unwrap().run().unwrap();
    assert_eq!(r.policy.rules, 6);
    assert_eq!(r.policy.fast_rules, 5);
    assert_eq!(r.policy.flagged, 1);
    assert_eq!(r.policy.blocked, 1);
    let (vol_a, vol_b, inst, bucket) = (
        node(&e, &crn("volume", "vol-a")),
        node(&e, &crn("volume", "vol-b")),
        node(&e, &crn("instance", "i-1")),
        node(&e, &crn("bucket", "logs")),
    );
    {
        let g = e.graph();
        let b = g.node(vol_b).unwrap();
        assert!(b.is_waste());
        assert_eq!(b.waste_reason(), "policy:gp2-volumes");
        assert!(!g.node(vol_a).unwrap().is_waste());
        assert!(!g.node(bucket).unwrap().is_waste(), "shadow rules do not flag");
    }
    assert_eq!(e.blocked_by(inst), vec!["keep-instances".to_owned()]);
    assert!(e.blocked_by(vol_b).is_empty());
    let f = e.findings();
    assert_eq!(f.deciding(vol_b).unwrap().rule, "policy:gp2-volumes");
    let last = e.policies().last_evaluation();
    assert_eq!(
        last.by_rule["costly"].matches, 2,
        "vol-b and i-1: {:?} {:?}",
        last.by_rule["costly"], r.policy
    );
    assert_eq!(last.by_rule["shadow-flag"].matches, 1);
    assert_eq!(last.by_rule["shadow-flag"].samples, vec![crn("bucket", "logs")]);
    // `props.volume_type` is missing on the instance and the bucket.
    assert_eq!(last.by_rule["broken"].matches, 1);
    assert_eq!(last.by_rule["broken"].errors, 2);
    assert!(
        last.by_rule["broken"].first_error.contains("No such key"),
        "{:?}",
        last.by_rule["broken"]
    );
    assert_eq!(last.by_rule["interp"].matches, 1, "the bucket has no properties");
    assert_eq!(last.by_rule["interp"].interpreted, 4);
    let v: u64 = r
        .policy
        .violations
        .iter()
        .filter(|(id, ty, mode, _)| id == "costly" && ty == "ec2:volume" && *mode == "enforcing")
        .map(|x| x.3)
        .sum();
    assert_eq!(v, 1);

    // A second scan takes the flagged node into the remediation pipeline
    // (its stage is versioned); a third leaves it as it was.
    let r2 = e.try_start_scan().unwrap().run().unwrap();
    assert_eq!(r2.policy.verdicts_changed, 0);
    assert_eq!(r2.sau.as_ref().map(|s| s.entered), Some(1), "{r2:?}");
    assert_eq!(r2.versions_written, 1, "{r2:?}");
    let r2 = e.try_start_scan().unwrap().run().unwrap();
    assert_eq!(r2.policy.verdicts_changed, 0);
    assert_eq!(r2.versions_written, 0, "{r2:?}");

    // Toggling the flag rule to shadow clears the node at the next scan.
    e.toggle_policy("gp2-volumes", "test").unwrap();
    let r3 = e.try_start_scan().unwrap().run().unwrap();
    assert_eq!(r3.policy.flagged, 0);
    assert!(!e.graph().node(vol_b).unwrap().is_waste());
    e.toggle_policy("gp2-volumes", "test").unwrap();
    e.reorder_policies(&["costly".into(), "keep-instances".into()], "test")
        .unwrap();
    drop(e);

    // After a restart: the rules, their order and modes, the last evaluation.
    let e = open(dir.path());
    let ids: Vec<String> = e.policies().rules().iter().map(|r| r.spec.id.clone()).collect();
    assert_eq!(
        ids,
        [
            "costly",
            "keep-instances",
            "gp2-volumes",
            "shadow-flag",
            "broken",
            "interp"
        ]
    );
    assert_eq!(e.policies().get("gp2-volumes").unwrap().spec.mode, Mode::Enforcing);
    assert_eq!(e.policies().last_evaluation().by_rule["costly"].matches, 2);
    e.try_start_scan().unwrap().run().unwrap();
    assert!({
        let id = node(&e, &crn("volume", "vol-b"));
        e.graph().node(id).unwrap().is_waste()
    });
    // Removing the rule clears the node at the next scan.
    e.remove_policy("gp2-volumes", "test").unwrap();
    e.try_start_scan().unwrap().run().unwrap();
    assert!(!{
        let id = node(&e, &crn("volume", "vol-b"));
        e.graph().node(id).unwrap().is_waste()
    });
    let q = svc_engine::store::ledger::HistoryQuery {
        event_type: Some("POLICY_CHANGE".into()),
        limit: 100,
        ..Default::default()
    };
    let changes = e.ledger().query(&q).unwrap().total;
    assert_eq!(changes, 6 + 1 + 1 + 1 + 1, "added x6, toggled x2, reordered, removed");
}

#[test]
fn bad_changes_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let e = open(dir.path());
    e.add_policies(&[spec("a", "cost > 1.0", Action::Warn, Mode::Enforcing)], "t")
        .unwrap();
    let bad = e.add_policies(
        &[
            spec("b", "cost > 2.0", Action::Warn, Mode::Enforcing),
            spec("c", "cost >", Action::Warn, Mode::Enforcing),
        ],
        "t",
    );
    match bad {
        Err(PolicyError::Invalid {
            index, line, column, ..
        }) => assert_eq!((index, line, column), (Some(1), 1, 7)),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        e.add_policies(&[spec("a", "true", Action::Warn, Mode::Enforcing)], "t"),
        Err(PolicyError::Duplicate(_))
    ));
    assert!(matches!(
        e.add_policies(&[spec("bad id!", "true", Action::Warn, Mode::Enforcing)], "t"),
        Err(PolicyError::Invalid { .. })
    ));
    assert!(matches!(e.remove_policy("nope", "t"), Err(PolicyError::NotFound(_))));
    assert!(matches!(e.toggle_policy("nope", "t"), Err(PolicyError::NotFound(_))));
    assert!(matches!(
        e.reorder_policies(&["nope".into()], "t"),
        Err(PolicyError::NotFound(_))
    ));
    assert!(matches!(
        e.reorder_policies(&["a".into(), "a".into()], "t"),
        Err(PolicyError::Invalid { .. })
    ));
    let ids: Vec<String> = e.policies().rules().iter().map(|r| r.spec.id.clone()).collect();
    assert_eq!(ids, ["a"]);
}

//! Policy conditions (CEL) from arbitrary text: compiling never panics
//! (bounds first, then the parser); a condition that compiles is evaluated
//! on every node of a small estate, and the fast path (column predicates)
//! gives the interpreter's answer, match, no match or error, on each node
//! and over a whole pass (counts, hits, per-type tallies).

#![no_main]

#[path = "common/estate.rs"]
mod estate;

use std::mem::discriminant;
use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use svc_engine::Graph;
use svc_engine::policy::compile::compile;
use svc_engine::policy::eval::{EvalOptions, EvalRule, check_node, evaluate};

static GRAPH: LazyLock<Graph> = LazyLock::new(estate::graph);

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(compiled) = compile(source) else {
        return;
    };
    let g = &*GRAPH;
    let opts = EvalOptions {
        now_us: estate::NOW_US,
        as_of_s: estate::NOW,
        hit_limit: usize::MAX,
        ..EvalOptions::default()
    };
    for n in g.nodes() {
        let slow = check_node(g, &compiled, n.id(), &opts, false).expect("the interpreter answers on every node");
        if let Some(fast) = check_node(g, &compiled, n.id(), &opts, true) {
            assert_eq!(
                discriminant(&fast),
                discriminant(&slow),
                "{source:?} on {}: fast path {fast:?}, interpreter {slow:?}",
                n.crn()
            );
        }
    }
    let rules = [EvalRule {
        compiled: &compiled,
        collect_hits: true,
    }];
    let fast = evaluate(g, &rules, &opts);
    let slow = evaluate(
        g,
        &rules,
        &EvalOptions {
            interpreter_only: true,
            ..opts.clone()
        },
    );
    assert_eq!(fast.nodes, slow.nodes);
    let (f, s) = (&fast.rules[0], &slow.rules[0]);
    assert_eq!((f.matches, f.errors), (s.matches, s.errors), "{source:?}");
    assert_eq!(f.hits, s.hits, "{source:?}");
    assert_eq!(f.by_type, s.by_type, "{source:?}");
});

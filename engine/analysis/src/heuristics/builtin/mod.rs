//! The engine's own waste rules (DESIGN.md section 4 step 4): one pass in
//! parallel over the node shards. Each rule names the resource types it
//! reads, a condition on properties and edges, a risk score (built-in rules
//! may use 80 to 100; plugins cannot), a suggested action and what removing
//! or changing the resource saves a month.
//!
//! - [`Rule`] and `RULES`: the catalogue, one module per provider.
//! - [`view`]: what a rule sees of a node: decoded properties, its
//!   effective cost (reported, else priced from [`crate::prices`]), its
//!   neighbours, and the time the estate was observed.
//! - [`ignore`]: the `svc:ignore` tag, honoured before any rule runs.

/// A provider's rule constructors, one for each kind named:
/// `rule_constructors!("aws": waste => Waste, optimize => Optimize)`
/// defines `waste(name, types, risk, action, suggestion, condition, check)`
/// and `optimize(..)` building that provider's [`Rule`]s of that kind.
macro_rules! rule_constructors {
    ($provider:literal: $($ctor:ident => $kind:ident),+) => {$(
        const fn $ctor(
            name: &'static str,
            types: &'static [&'static str],
            risk: u8,
            action: &'static str,
            suggestion: &'static str,
            condition: &'static str,
            check: fn(&super::view::Node<'_>, &mut super::Why<'_>) -> Option<super::Hit>,
        ) -> super::Rule {
            super::Rule {
                name,
                provider: $provider,
                types,
                kind: super::RuleKind::$kind,
                risk,
                action,
                suggestion,
                condition,
                check,
            }
        }
    )+};
}

mod aws;
mod azure;
pub mod cache;
mod gcp;
pub mod ignore;
mod k8s;
pub mod view;

pub use cache::Cache;

use std::borrow::Cow;
use std::fmt::{self, Write as _};

use rayon::prelude::*;

use self::ignore::Ignore;
use self::view::{Index, Keys, MachineName, MachineShard, Machines, Node, Unused};
use super::{Finding, FindingSource};
use svc_graph::graph::{Graph, visible};
use svc_graph::ids::{NodeId, Sym};

/// Whether a finding marks the resource as waste or suggests a cheaper
/// shape for a resource that is in use.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RuleKind {
    /// Paid for and unused: remove, stop or release it.
    Waste,
    /// Used, but dearer than it needs to be: resize or reconfigure it.
    Optimize,
}

impl RuleKind {
    pub fn label(self) -> &'static str {
        match self {
            RuleKind::Waste => "waste",
            RuleKind::Optimize => "optimize",
        }
    }
}

/// What a rule found on one node: what the suggested action saves.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Hit {
    /// USD a month the suggested action saves.
    pub savings: f64,
}

/// Where a rule writes why it fired: nowhere while the pass decides which
/// nodes are waste, into a string once a finding is rendered. A rule
/// writes its reason as `format_args!`, so the numbers in it are only
/// formatted when someone reads them.
pub struct Why<'w> {
    out: Option<&'w mut String>,
}

impl<'w> Why<'w> {
    /// Reasons are dropped.
    pub fn silent() -> Why<'static> {
        Why { out: None }
    }
    /// Reasons are written to `out`.
    pub fn to(out: &'w mut String) -> Why<'w> {
        Why { out: Some(out) }
    }
    /// A hit saving `savings` USD a month, because of `reason`
    /// ("unattached for 43 days, 500 GiB gp2, $50.00/mo").
    pub fn hit(&mut self, savings: f64, reason: fmt::Arguments<'_>) -> Hit {
        if let Some(out) = self.out.as_deref_mut() {
            // Writing to a String cannot fail.
            let _ = out.write_fmt(reason);
        }
        Hit { savings }
    }
}

/// One built-in rule.
#[derive(Debug)]
pub struct Rule {
    /// Stable name: the node's `verdict` and the finding's `rule`.
    pub name: &'static str,
    pub provider: &'static str,
    /// Node types (`<service>:<kind>`) the rule reads.
    pub types: &'static [&'static str],
    pub kind: RuleKind,
    pub risk: u8,
    /// One of the remediate actions (DESIGN.md section 2).
    pub action: &'static str,
    /// The suggested action in words.
    pub suggestion: &'static str,
    /// The condition, in words (for docs and `GET /api/v1/heuristics/status`).
    pub condition: &'static str,
    pub check: fn(&Node<'_>, &mut Why<'_>) -> Option<Hit>,
}

/// Every built-in rule.
pub fn rules() -> impl Iterator<Item = &'static Rule> {
    aws::RULES
        .iter()
        .chain(gcp::RULES)
        .chain(azure::RULES)
        .chain(k8s::RULES)
}

/// A rule by name.
pub fn rule(name: &str) -> Option<&'static Rule> {
    rules().find(|r| r.name == name)
}

/// Which built-in rules run (`[heuristics]` in the configuration).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    pub enabled: bool,
    /// Rules switched off by name.
    pub disabled: Vec<String>,
}

impl Default for Selection {
    fn default() -> Self {
        Selection {
            enabled: true,
            disabled: Vec::new(),
        }
    }
}

impl Selection {
    pub fn allows(&self, rule: &Rule) -> bool {
        self.enabled && !self.disabled.iter().any(|d| d == rule.name)
    }
}

/// One rule that fired on one node, before its reason is rendered.
#[derive(Copy, Clone, Debug)]
pub struct RuleHit {
    pub node: NodeId,
    pub rule: &'static Rule,
    /// USD a month.
    pub savings: f64,
}

/// Which nodes the built-in rules found, without reasons.
#[derive(Debug, Default)]
pub struct Decided {
    pub hits: Vec<RuleHit>,
    /// The reason of each hit, in order, when the pass wrote them.
    pub reasons: Vec<String>,
    /// Nodes the `svc:ignore` tag kept out, with why.
    pub ignored: Vec<(NodeId, Ignore)>,
    /// Nodes evaluated (of a type some rule reads), and rules run on them.
    pub evaluated: u64,
    pub checks: u64,
}

/// What the built-in pass produced.
#[derive(Debug, Default)]
pub struct BuiltinOutcome {
    pub findings: Vec<Finding>,
    /// Nodes the `svc:ignore` tag kept out, with why.
    pub ignored: Vec<(NodeId, Ignore)>,
    /// Nodes evaluated (of a type some rule reads), and rules run on them.
    pub evaluated: u64,
    pub checks: u64,
}

/// Runs the selected built-in rules over the nodes visible at `now_us`. `as_of_s`
/// is when the estate was observed (Unix seconds), for ages such as
/// "stopped for 43 days". A rule formats its reason only when it fires;
/// [`decide`] skips even that, and [`render`] writes the reasons of its
/// hits later.
pub fn run(graph: &Graph, now_us: u64, as_of_s: u64, selection: &Selection) -> BuiltinOutcome {
    with_pass(graph, now_us, as_of_s, selection, |ctx, by_type| {
        let decided = decide_in(graph, ctx, by_type, true);
        BuiltinOutcome {
            findings: decided
                .hits
                .iter()
                .zip(decided.reasons)
                .map(|(hit, reason)| finding(hit, reason))
                .collect(),
            ignored: decided.ignored,
            evaluated: decided.evaluated,
            checks: decided.checks,
        }
    })
    .unwrap_or_default()
}

/// Which nodes the selected rules fire on, with what each saves; the
/// reasons are left to [`render`].
pub fn decide(graph: &Graph, now_us: u64, as_of_s: u64, selection: &Selection) -> Decided {
    with_pass(graph, now_us, as_of_s, selection, |ctx, by_type| {
        decide_in(graph, ctx, by_type, false)
    })
    .unwrap_or_default()
}

/// The findings of `hits` (from [`decide`] over the same graph, at the
/// same times), each with its reason; a hit whose rule no longer fires
/// there is left out.
pub fn render(graph: &Graph, now_us: u64, as_of_s: u64, hits: &[RuleHit]) -> Vec<Finding> {
    with_pass(graph, now_us, as_of_s, &Selection::default(), |ctx, _| {
        render_in(ctx, hits)
    })
    .unwrap_or_default()
}

/// Calls `f` with what every rule of one pass shares; `None` when no
/// selected rule reads a type the graph holds.
fn with_pass<R>(
    graph: &Graph,
    now_us: u64,
    as_of_s: u64,
    selection: &Selection,
    f: impl FnOnce(&view::Ctx<'_>, &[Vec<(Sym, &'static Rule)>]) -> R,
) -> Option<R> {
    let reader = graph.interner().reader();
    let by_type = rules_by_type(&reader, selection);
    if by_type.iter().all(Vec::is_empty) {
        return None;
    }
    let keys = Keys::new(&reader);
    let index = Index::build(graph, &reader, &keys, now_us);
    let none = Machines::default();
    let first = view::Ctx {
        graph,
        reader: &reader,
        keys: &keys,
        index: &index,
        machines: &none,
        now_us,
        as_of_s,
    };
    let machines = Machines::build(&first);
    let ctx = view::Ctx {
        machines: &machines,
        ..first
    };
    Some(f(&ctx, &by_type))
}

/// One pass of the selected rules over the visible nodes. With `reasons`,
/// each hit's rule writes its reason as it fires (into `Decided::reasons`,
/// in the order of the hits); without, nothing is formatted.
fn decide_in(graph: &Graph, ctx: &view::Ctx<'_>, by_type: &[Vec<(Sym, &'static Rule)>], reasons: bool) -> Decided {
    let now_us = ctx.now_us;
    let parts: Vec<Decided> = graph
        .node_shards()
        .par_iter()
        .enumerate()
        .map(|(s, shard)| {
            let mut out = Decided::default();
            let mut reason = String::new();
            for r in 0..shard.len() {
                if !visible(shard.valid_to[r], now_us) {
                    continue;
                }
                let rules = match by_type.get(shard.ty[r].index()) {
                    Some(rules) if !rules.is_empty() => rules,
                    _ => continue,
                };
                let id = NodeId::new(s, r as u32, shard.generation);
                let node = Node::new(ctx, id);
                out.evaluated += 1;
                if let Some(why) = ignore::check(&node) {
                    out.ignored.push((id, why));
                    continue;
                }
                // Types such as `compute:disk` exist on several providers.
                let provider = shard.key[r][0];
                for (_, rule) in rules.iter().filter(|(p, _)| *p == provider) {
                    out.checks += 1;
                    let mut why = if reasons { Why::to(&mut reason) } else { Why::silent() };
                    if let Some(hit) = (rule.check)(&node, &mut why) {
                        out.hits.push(RuleHit {
                            node: id,
                            rule,
                            savings: hit.savings,
                        });
                        if reasons {
                            // One allocation of the exact size; the buffer is reused.
                            out.reasons.push(reason.as_str().to_owned());
                        }
                    }
                    reason.clear();
                }
            }
            out
        })
        .collect();
    let mut all = Decided::default();
    all.hits.reserve(parts.iter().map(|p| p.hits.len()).sum());
    all.reasons.reserve(parts.iter().map(|p| p.reasons.len()).sum());
    for mut p in parts {
        all.hits.append(&mut p.hits);
        all.reasons.append(&mut p.reasons);
        all.ignored.append(&mut p.ignored);
        all.evaluated += p.evaluated;
        all.checks += p.checks;
    }
    all
}

/// Renders each hit's reason by running its rule again on its node, this
/// time writing what it found.
fn render_in(ctx: &view::Ctx<'_>, hits: &[RuleHit]) -> Vec<Finding> {
    hits.par_iter()
        .with_min_len(1024)
        .filter_map(|hit| {
            // Most reasons fit; the rest grow once.
            let mut reason = String::with_capacity(96);
            let node = Node::find(ctx, hit.node)?;
            // A hit from another graph or time that no longer fires is dropped.
            let again = (hit.rule.check)(&node, &mut Why::to(&mut reason))?;
            Some(finding(
                &RuleHit {
                    savings: again.savings,
                    ..*hit
                },
                reason,
            ))
        })
        .collect()
}

fn finding(hit: &RuleHit, reason: String) -> Finding {
    let rule = hit.rule;
    Finding {
        node: hit.node,
        source: FindingSource::Builtin,
        rule: Cow::Borrowed(rule.name),
        is_waste: rule.kind == RuleKind::Waste,
        risk_score: rule.risk,
        reason,
        suggested_action: Cow::Borrowed(rule.suggestion),
        projected_savings_usd_mo: (hit.savings.max(0.0) * 100.0).round() / 100.0,
        annotations: Vec::new(),
    }
}

/// The selected rules of each node type present in the graph, with the
/// provider symbol each applies to, indexed by the type's symbol (a dense
/// table: one lookup per node). A rule whose provider the graph never saw
/// matches nothing and is left out.
fn rules_by_type(
    reader: &svc_graph::intern::InternerReader<'_>,
    selection: &Selection,
) -> Vec<Vec<(Sym, &'static Rule)>> {
    let mut table: Vec<Vec<(Sym, &'static Rule)>> = Vec::new();
    for rule in rules().filter(|r| selection.allows(r)) {
        let Some(provider) = reader.get(rule.provider) else {
            continue;
        };
        for ty in rule.types {
            if let Some(sym) = reader.get(ty) {
                if table.len() <= sym.index() {
                    table.resize(sym.index() + 1, Vec::new());
                }
                table[sym.index()].push((provider, rule));
            }
        }
    }
    table
}

/// CPU below this average over 7 days, with network below
/// [`IDLE_NET_BYTES_7D`], makes a running machine idle.
pub const IDLE_CPU_PCT: f64 = 5.0;
/// Network bytes in and out over 7 days below which a machine moves nothing.
pub const IDLE_NET_BYTES_7D: f64 = 100_000_000.0;
/// Days a machine must have been stopped before it counts as forgotten.
pub const STOPPED_DAYS: u64 = 30;
/// Days without access before storage counts as abandoned.
pub const STALE_DAYS: u64 = 90;
/// Days a resource may sit unattached or orphaned before it is reported
/// (so one that is being moved is not).
pub const GRACE_DAYS: u64 = 7;

impl Unused {
    fn describe(self) -> impl fmt::Display {
        fmt::from_fn(move |f| match self {
            Unused::Stopped(d) => write!(f, "stopped for {}", days(d)),
            Unused::Idle(cpu, net) => write!(f, "idle: {cpu:.1}% CPU and {} of network over 7 days", bytes(net)),
        })
    }
}

/// Whether a machine (EC2 instance, GCE instance, Azure VM) is unused:
/// stopped for [`STOPPED_DAYS`] or more, or running idle. Worked out once
/// per machine and pass ([`Machines`]), however many rules and volumes ask.
pub fn unused_machine(n: &Node<'_>) -> Option<Unused> {
    *n.unused.get_or_init(|| match n.machines().get(n.id()) {
        Some((verdict, until, edges)) => {
            if let Some(reads) = n.reads() {
                reads.bound_as_of(until);
            }
            n.read_edges(edges);
            verdict
        }
        None => machine_verdict(n),
    })
}

/// Node types whose verdict [`Machines`] works out before the rules run.
const MACHINE_TYPES: [&str; 3] = ["ec2:instance", "compute:instance", "compute:vm"];

impl Machines {
    fn build(ctx: &view::Ctx<'_>) -> Machines {
        let types: Vec<Sym> = MACHINE_TYPES.iter().filter_map(|t| ctx.reader.get(t)).collect();
        if types.is_empty() {
            return Machines::default();
        }
        let shards = ctx
            .graph
            .node_shards()
            .par_iter()
            .enumerate()
            .map(|(s, shard)| {
                let mut out = MachineShard {
                    at: vec![0; shard.len()],
                    verdicts: Vec::new(),
                };
                for r in 0..shard.len() {
                    if !types.contains(&shard.ty[r]) || !visible(shard.valid_to[r], ctx.now_us) {
                        continue;
                    }
                    let reads = view::Reads::default();
                    let node = Node::recording(ctx, NodeId::new(s, r as u32, shard.generation), &reads);
                    let verdict = machine_verdict(&node);
                    out.verdicts.push((verdict, reads.until_as_of.get(), reads.edges.get()));
                    out.at[r] = out.verdicts.len() as u32;
                }
                out
            })
            .collect();
        Machines { shards }
    }

    /// The machine's verdict, until when it holds and which of its own
    /// edges it read, when `id` is one of the machines.
    fn get(&self, id: NodeId) -> Option<(Option<Unused>, u64, u16)> {
        let shard = self.shards.get(id.shard())?;
        let at = *shard.at.get(id.row() as usize)?;
        at.checked_sub(1).map(|i| shard.verdicts[i as usize])
    }
}

fn machine_verdict(n: &Node<'_>) -> Option<Unused> {
    let k = n.keys();
    let stopped = match n.state() {
        "stopped" | "TERMINATED" | "deallocated" => true,
        "running" | "RUNNING" => false,
        // A provisioning state: the power state says whether it runs.
        _ => {
            let power = n.str(k.power_state)?;
            if power.ends_with("/stopped") || power.ends_with("/deallocated") {
                true
            } else if power.ends_with("/running") {
                false
            } else {
                return None;
            }
        }
    };
    if stopped {
        // Without a stop time the resource's own age bounds it.
        let d = n.days_since_prop(k.stopped_at).unwrap_or_else(|| n.age_days());
        return (d >= STOPPED_DAYS).then(|| Unused::Stopped(d.get()));
    }
    let cpu = n.num(k.cpu_avg_7d).filter(|c| *c < IDLE_CPU_PCT)?;
    // Flow records svc has seen count with the provider's own metric.
    let net = n.num(k.network_bytes_7d)? + n.observed_traffic_bytes();
    (net < IDLE_NET_BYTES_7D).then_some(Unused::Idle(cpu, net))
}

/// The unused machine a volume or disk is attached to, and why it is
/// unused. Worked out once per node and pass, however many rules ask.
pub fn attached_machine<'a>(n: &Node<'a>) -> Option<(MachineName<'a>, Unused)> {
    *n.attached_machine.get_or_init(|| {
        n.out(svc_graph::relation::Relation::AttachedTo)
            .find_map(|m| unused_machine(&m).map(|u| (MachineName(m.graph_ref()), u)))
    })
}

/// "500 GiB gp2, $50.00/mo": a volume's or disk's size, its class (the
/// first of the `class` properties it has, else `fallback`) and its cost,
/// read only when the reason is rendered.
pub fn storage_facts<'a>(n: &'a Node<'_>, class: [Option<Sym>; 2], fallback: &'static str) -> impl fmt::Display + 'a {
    fmt::from_fn(move |f| {
        let size = n.num(n.keys().size_gib).unwrap_or(0.0);
        let class = class.into_iter().find_map(|k| n.str(k)).unwrap_or(fallback);
        write!(f, "{size:.0} GiB {class}, {}", usd(n.cost()))
    })
}

/// A disk attached to an unused machine, described by `facts`.
pub fn disk_on_unused_machine(n: &Node<'_>, why: &mut Why<'_>, facts: impl fmt::Display) -> Option<Hit> {
    let (machine, unused) = attached_machine(n)?;
    Some(why.hit(
        n.cost(),
        format_args!("attached to {machine}, {}; {facts}", unused.describe()),
    ))
}

/// `$1,234.50/mo`, written where it is formatted (no allocation).
pub fn usd(v: f64) -> impl fmt::Display {
    fmt::from_fn(move |f| {
        let cents = (v * 100.0).round() as i64;
        let (whole, frac) = (cents / 100, (cents % 100).abs());
        if whole < 0 {
            f.write_str("-")?;
        }
        f.write_str("$")?;
        let mut digits = [0u8; 20];
        let mut n = whole.unsigned_abs();
        let mut len = 0;
        loop {
            digits[len] = b'0' + (n % 10) as u8;
            len += 1;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        for i in (0..len).rev() {
            f.write_char(char::from(digits[i]))?;
            if i > 0 && i % 3 == 0 {
                f.write_char(',')?;
            }
        }
        write!(f, ".{frac:02}/mo")
    })
}

/// `1.5 GiB`, `820 MiB`, `12 KiB` from bytes.
pub fn bytes(v: f64) -> impl fmt::Display {
    fmt::from_fn(move |f| {
        const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
        let mut v = v.max(0.0);
        let mut u = 0;
        while v >= 1024.0 && u < UNITS.len() - 1 {
            v /= 1024.0;
            u += 1;
        }
        if v >= 10.0 || u == 0 {
            write!(f, "{v:.0} {}", UNITS[u])
        } else {
            write!(f, "{v:.1} {}", UNITS[u])
        }
    })
}

/// "43 days", "1 day".
pub fn days(d: impl Into<u64>) -> impl fmt::Display {
    let d: u64 = d.into();
    fmt::from_fn(move |f| {
        if d == 1 {
            f.write_str("1 day")
        } else {
            write!(f, "{d} days")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_is_complete_and_consistent() {
        let all: Vec<&Rule> = rules().collect();
        assert!(all.len() >= 30, "{} rules", all.len());
        let mut names: Vec<&str> = all.iter().map(|r| r.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all.len(), "rule names are unique");
        for r in &all {
            assert!(
                !r.types.is_empty() && r.types.iter().all(|t| t.contains(':')),
                "{}",
                r.name
            );
            assert!(
                ["aws", "gcp", "azure", "kubernetes"].contains(&r.provider),
                "{}",
                r.name
            );
            assert!(
                [
                    "stop",
                    "start",
                    "delete",
                    "snapshot_delete",
                    "throttle",
                    "pause",
                    "resize",
                    "release",
                    "quarantine"
                ]
                .contains(&r.action),
                "{}",
                r.name
            );
            match r.kind {
                RuleKind::Waste => assert!((80..=100).contains(&r.risk), "{}", r.name),
                RuleKind::Optimize => assert!(r.risk < 80, "{}", r.name),
            }
            assert!(!r.condition.is_empty() && !r.suggestion.is_empty(), "{}", r.name);
        }
        for p in ["aws", "gcp", "azure", "kubernetes"] {
            assert!(all.iter().filter(|r| r.provider == p).count() >= 3, "{p}");
        }
    }

    #[test]
    fn money_and_sizes_read_well() {
        assert_eq!(usd(40.0).to_string(), "$40.00/mo");
        assert_eq!(usd(1234.5).to_string(), "$1,234.50/mo");
        assert_eq!(usd(1_234_567.891).to_string(), "$1,234,567.89/mo");
        assert_eq!(usd(999.999).to_string(), "$1,000.00/mo");
        assert_eq!(usd(-1234.5).to_string(), "-$1,234.50/mo");
        assert_eq!(usd(0.004).to_string(), "$0.00/mo");
        assert_eq!(bytes(20.0 * 1024.0 * 1024.0).to_string(), "20 MiB");
        assert_eq!(bytes(1.5 * 1024.0 * 1024.0 * 1024.0).to_string(), "1.5 GiB");
        assert_eq!(bytes(0.0).to_string(), "0 B");
        assert_eq!(days(1_u64).to_string(), "1 day");
        assert_eq!(days(43_u64).to_string(), "43 days");
    }
}

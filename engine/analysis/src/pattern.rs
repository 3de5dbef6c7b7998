//! The `engine.pattern` phase: resources that look alike, and the ones that
//! do not behave like their look-alikes.
//!
//! 1. **Signatures** (Weisfeiler-Lehman refinement). Every visible node
//!    starts from `h0 = hash(type, state)` (the strings, not their symbols,
//!    so a signature means the same in every data directory). Each round
//!    `h' = hash(h, sorted multiset of hash(relation, direction, h(neighbour))))`
//!    over the visible edges of the adjacency index, both directions.
//!    [`ROUNDS`] = 2: a node's signature describes what it is, what it is
//!    wired to and what those are wired to (two hops), which separates an
//!    attached volume from an unattached one and an instance behind a load
//!    balancer from a lone one, without making every node of a large
//!    application unique. The hash is seedless (a Murmur finaliser over a
//!    fixed mix), so signatures are stable across runs and restarts.
//! 2. **Groups**: visible nodes with the same final signature; a group
//!    counts from [`MIN_GROUP`] (3) members.
//! 3. **Outliers**: in a group whose majority side holds at least
//!    [`MAJORITY`] (80%) of its members, every member on the other side: a
//!    waste member of a group in use ("waste where its group is not"), or a
//!    member in use in a group of waste (a hint that a rule missed it).
//! 4. **Grouped findings**: when at least [`MIN_GROUP`] waste members of a
//!    group were all decided by the same rule, they become one finding with
//!    their summed monthly savings.
//!
//! Every pass runs with rayon over the columns and the adjacency index; the
//! rounds allocate nothing per node and hold two `u64` columns in all.

use std::time::Instant;

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

use svc_graph::graph::mem::fmix64;
use svc_graph::graph::{Graph, visible};
use svc_graph::ids::{NodeId, Sym};
use svc_graph::relation::Relation;

/// Refinement rounds: the neighbourhood depth a signature describes.
pub const ROUNDS: usize = 2;
/// Members a set of alike nodes needs to count as a group.
pub const MIN_GROUP: usize = 3;
/// Share of a group its majority side must hold before the other side's
/// members are reported as outliers.
pub const MAJORITY: f64 = 0.8;
/// Outliers and grouped findings kept in the report, each (the counts cover all).
pub const LISTED: usize = 1000;
/// Sample members named per grouped finding.
pub const SAMPLES: usize = 5;

/// Knobs of the pass; [`Options::default`] is what a scan uses.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    pub rounds: usize,
    pub min_group: usize,
    pub majority: f64,
    pub listed: usize,
    pub samples: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            rounds: ROUNDS,
            min_group: MIN_GROUP,
            majority: MAJORITY,
            listed: LISTED,
            samples: SAMPLES,
        }
    }
}

/// Which way a member differs from its group.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Direction {
    /// Waste where most of its look-alikes are in use.
    WasteAmongInUse,
    /// In use where most of its look-alikes are waste.
    InUseAmongWaste,
}

impl Direction {
    pub fn label(self) -> &'static str {
        match self {
            Direction::WasteAmongInUse => "waste_among_in_use",
            Direction::InUseAmongWaste => "in_use_among_waste",
        }
    }
}

/// A member that differs from its group.
#[derive(Clone, Debug, PartialEq)]
pub struct Outlier {
    pub node: NodeId,
    pub signature: u64,
    pub group_size: u64,
    pub group_waste: u64,
    pub direction: Direction,
    pub reason: String,
}

/// Waste members of one group, decided by one rule, as one finding.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupedFinding {
    pub signature: u64,
    /// The deciding rule.
    pub rule: String,
    /// `<service>:<kind>` of the members.
    pub ty: String,
    /// Waste members (all decided by `rule`).
    pub members: u64,
    pub group_size: u64,
    pub savings_usd_mo: f64,
    /// The members with the largest savings, at most [`Options::samples`].
    pub samples: Vec<NodeId>,
    pub summary: String,
}

/// What the pass found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PatternReport {
    /// The scan that computed it (0 before any).
    pub scan_seq: u64,
    pub rounds: u64,
    pub min_group: u64,
    pub majority: f64,
    /// Visible nodes given a signature.
    pub signatures: u64,
    pub distinct_signatures: u64,
    /// Groups of at least the minimum size, and the nodes in them.
    pub groups: u64,
    pub grouped_nodes: u64,
    pub outliers_total: u64,
    pub grouped_total: u64,
    /// At most [`Options::listed`], largest groups first.
    pub outliers: Vec<Outlier>,
    /// At most [`Options::listed`], largest savings first.
    pub grouped: Vec<GroupedFinding>,
    pub duration_ms: u64,
}

impl PatternReport {
    /// The counts as they appear in `SCAN_COMPLETED`.
    pub fn payload(&self) -> serde_json::Value {
        serde_json::json!({
            "groups": self.groups,
            "outliers": self.outliers_total,
            "grouped": self.grouped_total,
            "duration_ms": self.duration_ms,
        })
    }
}

/// Final signatures by dense node index (the adjacency numbering); 0 is
/// "no signature" (an invisible row), never a computed value.
pub struct Signatures {
    sig: Vec<u64>,
}

impl Signatures {
    /// The signature of `id`, `None` for a node that has none.
    pub fn get(&self, graph: &Graph, id: NodeId) -> Option<u64> {
        let d = graph.adjacency().dense(id)?;
        self.sig.get(d as usize).copied().filter(|&h| h != 0)
    }

    pub fn by_dense(&self) -> &[u64] {
        &self.sig
    }
}

const K: u64 = 0x9E37_79B9_7F4A_7C15;

/// Order-sensitive combination of two hashes; never 0.
#[inline]
fn mix(h: u64, x: u64) -> u64 {
    fmix64(h.rotate_left(23).wrapping_mul(K) ^ x.wrapping_add(K)).max(1)
}

/// FNV-1a over the bytes, then the finaliser: the same on every platform.
fn str_hash(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    fmix64(h)
}

/// Rows of each node shard the adjacency numbers: `(shard, dense start, rows)`.
fn shard_ranges(graph: &Graph) -> Vec<(usize, usize, usize)> {
    let base = &graph.adjacency().base;
    graph
        .node_shards()
        .iter()
        .enumerate()
        .filter_map(|(s, shard)| {
            let (a, b) = (*base.get(s)? as usize, *base.get(s + 1)? as usize);
            Some((s, a, (b - a).min(shard.len())))
        })
        .collect()
}

/// Computes every visible node's signature at `now_us` with `rounds` rounds.
pub fn signatures(graph: &Graph, now_us: u64, rounds: usize) -> Signatures {
    let adj = graph.adjacency();
    let n = adj.node_count();
    let ranges = shard_ranges(graph);
    let shards = graph.node_shards();
    // Type and state strings hashed once each.
    let syms: FxHashSet<Sym> = ranges
        .par_iter()
        .map(|&(s, _, rows)| {
            let sh = &shards[s];
            let mut set = FxHashSet::default();
            for r in 0..rows {
                set.insert(sh.ty[r]);
                set.insert(sh.state[r]);
            }
            set
        })
        .reduce(FxHashSet::default, |mut a, b| {
            a.extend(b);
            a
        });
    let names: FxHashMap<Sym, u64> = {
        let reader = graph.interner().reader();
        syms.into_iter().map(|s| (s, str_hash(reader.resolve(s)))).collect()
    };
    let mut cur = vec![0u64; n];
    {
        let mut slices = Vec::with_capacity(ranges.len());
        let mut rest = &mut cur[..];
        let mut at = 0;
        for &(s, start, rows) in &ranges {
            let (_, tail) = std::mem::take(&mut rest).split_at_mut(start - at);
            let (mine, tail) = tail.split_at_mut(rows);
            slices.push((s, mine));
            rest = tail;
            at = start + rows;
        }
        slices.into_par_iter().for_each(|(s, out)| {
            let sh = &shards[s];
            for (r, h) in out.iter_mut().enumerate() {
                if visible(sh.valid_to[r], now_us) {
                    *h = mix(names[&sh.ty[r]], names[&sh.state[r]]);
                }
            }
        });
    }
    if rounds == 0 {
        return Signatures { sig: cur };
    }
    // Each adjacency slot's label (relation and direction), worked out once.
    let label = |rels: &[Relation], dir: u64| -> Vec<u64> {
        rels.par_iter().map(|&rel| mix(0x5EED, rel as u64 * 2 + dir)).collect()
    };
    let (out_label, in_label) = (label(&adj.out_rel, 0), label(&adj.in_rel, 1));
    let mut next = vec![0u64; n];
    for _ in 0..rounds {
        let prev = &cur;
        next.par_chunks_mut(4096).enumerate().for_each(|(c, chunk)| {
            for (k, out) in chunk.iter_mut().enumerate() {
                let v = c * 4096 + k;
                let h = prev[v];
                if h == 0 {
                    *out = 0;
                    continue;
                }
                // The multiset of (relation, direction, neighbour) as the
                // count and the wrapping sum of each element's hash: equal
                // multisets give equal values in any order, without sorting.
                let (mut count, mut sum) = (0u64, 0u64);
                for (off, nodes, labels) in [
                    (&adj.out_off, &adj.out_node, &out_label),
                    (&adj.in_off, &adj.in_node, &in_label),
                ] {
                    let (a, b) = (off[v] as usize, off[v + 1] as usize);
                    for (&w, &l) in nodes[a..b].iter().zip(&labels[a..b]) {
                        let hw = prev[w as usize];
                        if hw != 0 {
                            count += 1;
                            sum = sum.wrapping_add(fmix64(hw ^ l));
                        }
                    }
                }
                *out = mix(mix(h, count), sum);
            }
        });
        std::mem::swap(&mut cur, &mut next);
    }
    Signatures { sig: cur }
}

/// What one group contributes, before the lists are capped.
#[derive(Default)]
struct GroupOut {
    groups: u64,
    grouped_nodes: u64,
    /// `(group size, signature, node, group waste, direction)`.
    outliers: Vec<(u64, u64, NodeId, u64, Direction)>,
    /// `(signature, rule, members, group size, savings, samples)`.
    grouped: Vec<(u64, Sym, u64, u64, f64, Vec<NodeId>)>,
    rule_of_group: Vec<(u64, Option<Sym>)>,
}

/// Runs the whole pass with the default [`Options`]. `savings(id)` is a
/// node's deciding saving when the heuristics phase priced one; otherwise
/// its reported monthly cost counts.
pub fn run(graph: &Graph, now_us: u64, savings: &(dyn Fn(NodeId) -> Option<f64> + Sync)) -> PatternReport {
    run_with(graph, now_us, &Options::default(), savings)
}

/// [`run`] with explicit [`Options`].
pub fn run_with(
    graph: &Graph,
    now_us: u64,
    opts: &Options,
    savings: &(dyn Fn(NodeId) -> Option<f64> + Sync),
) -> PatternReport {
    let started = Instant::now();
    let sigs = signatures(graph, now_us, opts.rounds);
    let shards = graph.node_shards();
    // (signature, node) for every signed node, sorted: groups are runs, and
    // the order depends only on the graph, not on the dense numbering.
    let mut keyed: Vec<(u64, NodeId)> = shard_ranges(graph)
        .into_par_iter()
        .flat_map_iter(|(s, start, rows)| {
            let generation = shards[s].generation;
            let sig = &sigs.sig;
            (0..rows).filter_map(move |r| {
                let h = sig[start + r];
                (h != 0).then(|| (h, NodeId::new(s, r as u32, generation)))
            })
        })
        .collect();
    drop(sigs);
    keyed.par_sort_unstable();
    let mut starts: Vec<usize> = Vec::new();
    for i in 0..keyed.len() {
        if i == 0 || keyed[i].0 != keyed[i - 1].0 {
            starts.push(i);
        }
    }
    let distinct = starts.len() as u64;
    starts.push(keyed.len());
    let waste = |id: NodeId| shards[id.shard()].waste.get(id.row() as usize);
    let rule = |id: NodeId| shards[id.shard()].verdict[id.row() as usize];
    let cost = |id: NodeId| savings(id).unwrap_or_else(|| f64::from(shards[id.shard()].cost[id.row() as usize]));
    let out = starts
        .par_windows(2)
        .filter(|w| w[1] - w[0] >= opts.min_group)
        .fold(GroupOut::default, |mut acc, w| {
            let members = &keyed[w[0]..w[1]];
            let sig = members[0].0;
            let n = members.len() as u64;
            let wasted: Vec<NodeId> = members.iter().map(|m| m.1).filter(|&id| waste(id)).collect();
            let wc = wasted.len() as u64;
            acc.groups += 1;
            acc.grouped_nodes += n;
            let one_rule = wasted
                .first()
                .and_then(|&f| rule(f))
                .filter(|r| wasted.iter().all(|&id| rule(id) == Some(*r)));
            if wc > 0 && (n - wc) as f64 >= opts.majority * n as f64 {
                for &id in &wasted {
                    acc.outliers.push((n, sig, id, wc, Direction::WasteAmongInUse));
                }
            } else if wc < n && wc as f64 >= opts.majority * n as f64 {
                for &(_, id) in members.iter().filter(|m| !waste(m.1)) {
                    acc.outliers.push((n, sig, id, wc, Direction::InUseAmongWaste));
                }
            }
            if wc > 0 {
                acc.rule_of_group.push((sig, one_rule));
            }
            if let Some(r) = one_rule
                && wasted.len() >= opts.min_group
            {
                let mut priced: Vec<(f64, NodeId)> = wasted.iter().map(|&id| (cost(id), id)).collect();
                let total: f64 = priced.iter().map(|p| p.0).sum();
                priced.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
                let samples = priced.iter().take(opts.samples).map(|p| p.1).collect();
                acc.grouped.push((sig, r, wc, n, total, samples));
            }
            acc
        })
        .reduce(GroupOut::default, |mut a, mut b| {
            a.groups += b.groups;
            a.grouped_nodes += b.grouped_nodes;
            a.outliers.append(&mut b.outliers);
            a.grouped.append(&mut b.grouped);
            a.rule_of_group.append(&mut b.rule_of_group);
            a
        });
    let mut report = PatternReport {
        rounds: opts.rounds as u64,
        min_group: opts.min_group as u64,
        majority: opts.majority,
        signatures: keyed.len() as u64,
        distinct_signatures: distinct,
        groups: out.groups,
        grouped_nodes: out.grouped_nodes,
        outliers_total: out.outliers.len() as u64,
        grouped_total: out.grouped.len() as u64,
        ..PatternReport::default()
    };
    let group_rule: FxHashMap<u64, Option<Sym>> = out.rule_of_group.into_iter().collect();
    let reader = graph.interner().reader();
    let ty_of = |id: NodeId| reader.resolve(shards[id.shard()].ty[id.row() as usize]);
    let mut outliers = out.outliers;
    outliers.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    outliers.truncate(opts.listed);
    report.outliers = outliers
        .into_iter()
        .map(|(n, sig, id, wc, direction)| {
            let ty = ty_of(id);
            let reason = match direction {
                Direction::WasteAmongInUse => {
                    let by = rule(id).map_or("a finding", |r| reader.resolve(r));
                    format!("waste ({by}) while {} of {n} alike {ty} resources are not", n - wc)
                }
                Direction::InUseAmongWaste => {
                    let by = match group_rule.get(&sig).copied().flatten() {
                        Some(r) => format!("all by {}", reader.resolve(r)),
                        None => "by several rules".to_owned(),
                    };
                    format!(
                        "not waste while {wc} of {n} alike {ty} resources are ({by}); \
                         a rule may have missed it"
                    )
                }
            };
            Outlier {
                node: id,
                signature: sig,
                group_size: n,
                group_waste: wc,
                direction,
                reason,
            }
        })
        .collect();
    let mut grouped = out.grouped;
    grouped.sort_unstable_by(|a, b| b.4.total_cmp(&a.4).then(a.0.cmp(&b.0)));
    grouped.truncate(opts.listed);
    report.grouped = grouped
        .into_iter()
        .map(|(sig, r, members, n, total, samples)| {
            let ty = samples.first().map(|&id| ty_of(id)).unwrap_or_default().to_owned();
            let rule = reader.resolve(r).to_owned();
            let of = if members < n {
                format!(" (of {n})")
            } else {
                String::new()
            };
            let summary = format!("{members} alike {ty}{of}, all {rule}: {}/mo", dollars(total));
            GroupedFinding {
                signature: sig,
                rule,
                ty,
                members,
                group_size: n,
                savings_usd_mo: total,
                samples,
                summary,
            }
        })
        .collect();
    report.duration_ms = started.elapsed().as_millis() as u64;
    report
}

/// `$1,204.00`.
pub fn dollars(v: f64) -> String {
    let cents = (v * 100.0).round() as i64;
    let (sign, cents) = if cents < 0 { ("-", -cents) } else { ("", cents) };
    let whole = (cents / 100).to_string();
    let mut grouped = String::with_capacity(whole.len() + whole.len() / 3);
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!("{sign}${grouped}.{:02}", cents % 100)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollars_group_thousands() {
        assert_eq!(dollars(1204.0), "$1,204.00");
        assert_eq!(dollars(0.5), "$0.50");
        assert_eq!(dollars(1_234_567.891), "$1,234,567.89");
        assert_eq!(dollars(999.999), "$1,000.00");
        assert_eq!(dollars(-12.3), "-$12.30");
    }

    #[test]
    fn mixing_is_fixed_and_order_sensitive() {
        // A fixed value (recomputed independently): a change of the hash
        // would change every signature a user has seen.
        assert_eq!(
            mix(str_hash("ec2:volume"), str_hash("available")),
            0x0f60_84aa_46dc_4aea
        );
        assert_ne!(mix(1, 2), mix(2, 1));
        assert_ne!(mix(str_hash("a"), str_hash("b")), 0);
    }
}

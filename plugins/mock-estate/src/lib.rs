//! The mock estate: a deterministic simulated organisation on AWS, GCP,
//! Azure and Kubernetes, with realistic types, ids, prices and edges, and
//! about 20% waste by construction.
//!
//! The estate is built from units (an application stack, a Kubernetes
//! cluster, a GCP project, an Azure resource group), repeated until the
//! expected number of resources reaches the requested scale. Everything is a
//! pure function of `(seed, unit, slot, epoch)` computed with a fixed
//! generator, so the same seed, scale and epoch always give byte-identical
//! batches (given an interner in the same state), and epoch N is generated
//! directly. Between epochs about 1.5% of resources change a property, about
//! 0.5% disappear and about 0.5% appear.
//!
//! Timestamps are simulated: epoch 0 is [`REFERENCE_TIME`] and each epoch
//! adds [`EPOCH_SECS`]; nothing reads the wall clock.

mod aws;
mod aws_data;
mod azure;
mod catalog;
mod clock;
mod ec2;
pub mod effects;
mod emit;
mod gcp;
mod k8s;
mod names;
mod rng;
mod syms;
mod wire;

use std::fmt;
use std::ops::Range;

use rayon::prelude::*;
use svc_engine::Interner;
use svc_engine::graph::{Adjust, EdgeBatch, NodeBatch};
use svc_engine::scan::{
    QuarantineOutcome, RemediateOutcome, RemediateRequest, ScanContext, ScanSink, Source, SourceError,
};

pub use clock::{EPOCH_SECS, REFERENCE_TIME, epoch_time};
use emit::{Mode, Out, Unit};
use k8s::Host;
use rng::{Rng, hash3};
use syms::{S, Syms};
pub use wire::WireOut;

/// Nodes (and edges) per batch when scanning.
pub const SCAN_BATCH: usize = 4096;
/// Units planned at once, at most, while an estate is laid out.
const PLAN_BLOCK: u64 = 512;
/// The daemon's default scale.
pub const DEFAULT_SCALE: usize = 300;
/// The providers the estate reports (CRN provider segments).
pub const PROVIDERS: [&str; 4] = ["aws", "gcp", "azure", "kubernetes"];

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Kind {
    App,
    Cluster(Host),
    Gcp,
    Azure,
}

/// The kind of unit `unit`: the first four cover every provider, the rest
/// are drawn (38% AWS stacks, 30% Kubernetes clusters, 16% GCP, 16% Azure).
fn kind_of(seed: u64, unit: u64) -> Kind {
    match unit {
        0 => Kind::App,
        1 => Kind::Cluster(Host::Aws),
        2 => Kind::Gcp,
        3 => Kind::Azure,
        _ => match Rng::new(hash3(seed, unit, 0)).below(100) {
            0..38 => Kind::App,
            38..54 => Kind::Cluster(Host::Aws),
            54..61 => Kind::Cluster(Host::Gcp),
            61..68 => Kind::Cluster(Host::Azure),
            68..84 => Kind::Gcp,
            _ => Kind::Azure,
        },
    }
}

fn build(u: &mut Unit<'_>, kind: Kind) {
    match kind {
        Kind::App => aws::app_stack(u),
        Kind::Cluster(host) => k8s::cluster(u, host),
        Kind::Gcp => gcp::project(u),
        Kind::Azure => azure::subscription(u),
    }
}

/// The kind of unit `index` of the estate of `seed`, and its cluster name
/// if it is a cluster.
fn kind_and_cluster(seed: u64, index: u64) -> (Kind, Option<String>) {
    let kind = kind_of(seed, index);
    let cluster = match kind {
        Kind::Cluster(host) => Some(k8s::cluster_name(seed, index, host)),
        _ => None,
    };
    (kind, cluster)
}

/// Unit `index` of the estate of `seed` at epoch 0: its kind, its cluster
/// name if it is a cluster, and each slot's expected presence.
fn plan_unit(syms: &Syms, seed: u64, index: u64) -> (Kind, Option<String>, Vec<f32>) {
    let (kind, cluster) = kind_and_cluster(seed, index);
    let mut expect = Vec::with_capacity(64);
    let name = S {
        sym: syms.global.sym,
        name: cluster.as_deref().unwrap_or(""),
    };
    build(
        &mut Unit::new(syms, (seed, index, 0), u32::MAX, name, Mode::Plan(&mut expect)),
        kind,
    );
    (kind, cluster, expect)
}

/// Where the scale cuts an estate: each unit's expected nodes (its slots'
/// chances of existing) added up in order, the estate ending once the sum
/// is within half a node of the scale. The one rule both
/// [`MockEstate::new`] and [`generate_wire`] cut by.
struct Cut {
    target: f64,
    /// The expected nodes taken so far.
    acc: f64,
}

impl Cut {
    fn new(scale: usize) -> Cut {
        Cut {
            target: scale as f64,
            acc: 0.0,
        }
    }

    fn reached(&self) -> bool {
        self.acc + 0.5 >= self.target
    }

    /// How many of the next unit's slots (their chances `expect`, in
    /// order) the estate takes; `None` when it ended before the unit.
    fn take(&mut self, expect: &[f32]) -> Option<u32> {
        if self.reached() {
            return None;
        }
        let mut limit = 0;
        for e in expect {
            if self.reached() {
                break;
            }
            self.acc += f64::from(*e);
            limit += 1;
        }
        Some(limit)
    }
}

/// Units of a chunk of the wire form when nothing is known yet of how many
/// nodes a unit writes (the estate's units hold ~34 slots on average).
const FIRST_UNITS_PER_CHUNK: u64 = 32;

/// A chunk of units in the wire form, and what a plan of them records:
/// each slot's probability of existing, and where each unit's slots end.
struct WireChunk<O> {
    units: Range<u64>,
    out: O,
    expect: Vec<f32>,
    ends: Vec<usize>,
}

/// Generates the estate of `seed` and `scale` at `epoch` in a provider
/// plugin's wire form (see [`WireOut`]): the units a [`MockEstate`] of the
/// same seed and scale holds, each cut where its plan cuts it, so the
/// nodes and edges are exactly those of [`MockEstate::generate`].
///
/// The estate is planned as it is written instead of before: chunks of
/// units (about a `batch_size` of nodes each) are written a window at a
/// time in parallel, each slot's probability of existing recorded as it
/// is written, and the window's chunks are then handed to `each` in order
/// while their probabilities add up; the chunk in which the sum reaches
/// the scale is written again up to that slot, and nothing after it is
/// handed on. Only that chunk is written twice (and the window's chunks
/// after it for nothing), where planning first ran every unit twice; and
/// the first messages leave before the estate's size is known. Memory
/// holds one window, not the estate. Stops at the first `Err` from
/// `each`, which it returns.
pub fn generate_wire<O: WireOut + Send, E>(
    (seed, scale, epoch): (u64, usize, u64),
    batch_size: usize,
    make: impl Fn() -> O + Sync,
    mut each: impl FnMut(O) -> Result<(), E>,
) -> Result<(), E> {
    let interner = Interner::new();
    let syms = Syms::new(&interner, seed);
    // Every key and tag symbol the wire form writes is interned by now.
    let names = std::sync::Arc::new(wire::Names::new(&interner));
    let window = rayon::current_num_threads().max(1) * 2;
    let json = || wire::Json::new(names.clone());
    let write = |json: &mut wire::Json, units: Range<u64>, last_limit: u32| {
        let mut chunk = WireChunk {
            units: units.clone(),
            out: make(),
            expect: Vec::new(),
            ends: Vec::new(),
        };
        for i in units.clone() {
            let (kind, cluster) = kind_and_cluster(seed, i);
            let cluster = match &cluster {
                Some(name) => S {
                    sym: interner.intern(name),
                    name,
                },
                None => syms.global,
            };
            let limit = if i + 1 == units.end { last_limit } else { u32::MAX };
            let mode = Mode::Wire(json, &mut chunk.out, &mut chunk.expect);
            build(&mut Unit::new(&syms, (seed, i, epoch), limit, cluster, mode), kind);
            chunk.ends.push(chunk.expect.len());
        }
        chunk
    };
    let batch = batch_size.max(1) as f64;
    let mut cut = Cut::new(scale);
    let (mut next, mut units_done) = (0u64, 0u64);
    while !cut.reached() {
        // Units a chunk, for about a batch of nodes each (a little under,
        // so that a chunk seldom spills a small message), and near the
        // end no more than the estate is expected to need.
        let mut per_chunk = if units_done == 0 || cut.acc <= 0.0 {
            FIRST_UNITS_PER_CHUNK
        } else {
            let per_unit = cut.acc / units_done as f64;
            let left = ((cut.target - cut.acc) / per_unit).max(0.0).ceil() as u64 + 1;
            ((batch * 0.875 / per_unit) as u64).min(left.div_ceil(window as u64))
        };
        per_chunk = per_chunk.max(1);
        let ranges: Vec<Range<u64>> = (0..window as u64)
            .map(|k| next + k * per_chunk..next + (k + 1) * per_chunk)
            .collect();
        next += window as u64 * per_chunk;
        let chunks: Vec<WireChunk<O>> = ranges
            .into_par_iter()
            .map_init(json, |json, units| write(json, units, u32::MAX))
            .collect();
        for chunk in chunks {
            let mut start = 0;
            for (u, &end) in chunk.ends.iter().enumerate() {
                let unit = chunk.units.start + u as u64;
                match cut.take(chunk.expect.get(start..end).unwrap_or_default()) {
                    None => {
                        // The estate ended before this unit.
                        if unit > chunk.units.start {
                            each(write(&mut json(), chunk.units.start..unit, u32::MAX).out)?;
                        }
                        return Ok(());
                    }
                    Some(limit) if (limit as usize) < end - start => {
                        each(write(&mut json(), chunk.units.start..unit + 1, limit).out)?;
                        return Ok(());
                    }
                    Some(_) => start = end,
                }
            }
            units_done += chunk.ends.len() as u64;
            each(chunk.out)?;
        }
    }
    Ok(())
}

struct UnitPlan {
    kind: Kind,
    /// Slots written; the last unit is cut to meet the scale.
    limit: u32,
    cluster: Option<String>,
}

/// The mock estate's name as a scan source: also that of `svc-plugin-mock`,
/// which serves the same estate.
pub const SOURCE_NAME: &str = "mock";

/// A deterministic simulated estate.
pub struct MockEstate {
    seed: u64,
    scale: usize,
    units: Vec<UnitPlan>,
    expected: f64,
    /// The simulated time of the last scan.
    observed: Option<u64>,
    /// What remediation did to the estate.
    effects: effects::Effects,
}

impl fmt::Debug for MockEstate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MockEstate")
            .field("seed", &self.seed)
            .field("scale", &self.scale)
            .field("units", &self.units.len())
            .finish()
    }
}

impl MockEstate {
    /// `seed` makes it deterministic; `scale` is the approximate number of
    /// resources present at any epoch.
    pub fn new(seed: u64, scale: usize) -> MockEstate {
        let interner = Interner::new();
        let syms = Syms::new(&interner, seed);
        // Each unit is planned on its own (its slots at epoch 0), several at
        // once; they are then taken in order until the scale is reached.
        // A plan formats no names (see `names::planning`).
        let plan = |index: u64| names::planning(|| plan_unit(&syms, seed, index));
        let mut units = Vec::new();
        let mut cut = Cut::new(scale);
        let mut index = 0u64;
        let mut block = 8;
        'plan: loop {
            let planned: Vec<_> = (index..index + block).into_par_iter().map(plan).collect();
            for (kind, cluster, expect) in planned {
                let Some(limit) = cut.take(&expect) else {
                    break 'plan;
                };
                units.push(UnitPlan { kind, limit, cluster });
                index += 1;
            }
            block = (block * 2).min(PLAN_BLOCK);
        }
        MockEstate {
            seed,
            scale,
            units,
            expected: cut.acc,
            observed: None,
            effects: effects::Effects::in_memory(),
        }
    }

    /// Keeps what remediation does to the estate in `path`, across restarts.
    pub fn with_effects_file(mut self, path: &std::path::Path) -> MockEstate {
        self.effects = effects::Effects::open(path);
        self
    }

    /// What remediation and quarantine changed, by CRN.
    pub fn effects(&self) -> &effects::Effects {
        &self.effects
    }

    /// Shows remediation's effects in generated batches: deleted resources
    /// are dropped, the others report the state an action left them in.
    fn apply_effects(&self, interner: &Interner, nodes: &mut [NodeBatch]) {
        if self.effects.is_empty() {
            return;
        }
        let mut by_hash: rustc_hash::FxHashMap<u64, Vec<([svc_engine::Sym; 5], String, Adjust)>> = Default::default();
        for (crn, state) in self.effects.states() {
            let Ok(c) = svc_engine::Crn::parse(crn) else { continue };
            let key = svc_engine::graph::NodeKeyRef::intern(interner, &c);
            let adjust = if state == "deleted" {
                Adjust::Drop
            } else {
                Adjust::State(interner.intern(state))
            };
            by_hash
                .entry(key.hash())
                .or_default()
                .push((key.syms(), c.id.clone(), adjust));
        }
        for b in nodes {
            b.adjust(|hash, syms, id| {
                by_hash
                    .get(&hash)
                    .and_then(|v| v.iter().find(|(s, i, _)| *s == syms && i == id))
                    .map_or(Adjust::Keep, |(_, _, a)| *a)
            });
        }
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub fn scale(&self) -> usize {
        self.scale
    }

    /// Expected number of resources at an epoch.
    pub fn expected_nodes(&self) -> f64 {
        self.expected
    }

    /// Generates the estate as it is at `epoch` (0 = first scan), into
    /// batches of at most `batch_size` nodes or edges. Interns every string
    /// it needs up front, in a fixed order; generation itself runs in parallel.
    pub fn generate(&self, interner: &Interner, epoch: u64, batch_size: usize) -> (Vec<NodeBatch>, Vec<EdgeBatch>) {
        let outs = self.run(interner, epoch, batch_size, false);
        let mut nodes = Vec::with_capacity(outs.iter().map(|o| o.nodes.len()).sum());
        let mut edges = Vec::with_capacity(outs.iter().map(|o| o.edges.len()).sum());
        for out in outs {
            nodes.extend(out.nodes);
            edges.extend(out.edges);
        }
        (nodes, edges)
    }

    /// Ground truth: the CRNs (graph form, sorted) of the resources that are
    /// waste by construction at `epoch` (without those tagged `svc:ignore`),
    /// and the number of resources at `epoch`.
    pub fn waste_truth(&self, epoch: u64) -> (Vec<String>, usize) {
        let interner = Interner::new();
        let outs = self.run(&interner, epoch, SCAN_BATCH, true);
        let total = outs.iter().map(|o| o.total).sum();
        let mut waste: Vec<String> = outs.into_iter().flat_map(|o| o.waste.unwrap_or_default()).collect();
        waste.sort_unstable();
        (waste, total)
    }

    /// Units grouped so that a group's slots fit in one node batch.
    fn chunks(&self, batch_size: usize) -> Vec<Range<usize>> {
        let mut chunks = Vec::new();
        let (mut start, mut slots) = (0, 0usize);
        for (i, p) in self.units.iter().enumerate() {
            let n = p.limit as usize;
            if i > start && slots + n > batch_size {
                chunks.push(start..i);
                (start, slots) = (i, 0);
            }
            slots += n;
        }
        if start < self.units.len() {
            chunks.push(start..self.units.len());
        }
        chunks
    }

    fn run(&self, interner: &Interner, epoch: u64, batch_size: usize, truth: bool) -> Vec<Out> {
        let syms = Syms::new(interner, self.seed);
        let clusters = self.clusters(interner, &syms);
        let batch_size = batch_size.max(1);
        self.chunks(batch_size)
            .into_par_iter()
            .map(|range| self.chunk(&syms, &clusters, range, epoch, batch_size, truth))
            .collect()
    }

    /// Each unit's cluster name, interned (the global symbol for units that are not clusters).
    fn clusters<'a>(&'a self, interner: &Interner, syms: &Syms) -> Vec<S<'a>> {
        self.units
            .iter()
            .map(|p| match &p.cluster {
                Some(c) => S {
                    sym: interner.intern(c),
                    name: c,
                },
                None => syms.global,
            })
            .collect()
    }

    /// Generates the units of `range` at `epoch`.
    fn chunk(
        &self,
        syms: &Syms,
        clusters: &[S<'_>],
        range: Range<usize>,
        epoch: u64,
        batch_size: usize,
        truth: bool,
    ) -> Out {
        let hint = self.units[range.clone()].iter().map(|p| p.limit as usize).sum();
        let mut out = Out::new(batch_size, hint, truth);
        for i in range {
            let p = &self.units[i];
            let mode = Mode::Emit(&mut out);
            build(
                &mut Unit::new(syms, (self.seed, i as u64, epoch), p.limit, clusters[i], mode),
                p.kind,
            );
        }
        out.finish();
        out
    }
}

impl Source for MockEstate {
    fn name(&self) -> &str {
        SOURCE_NAME
    }

    fn providers(&self) -> Vec<String> {
        PROVIDERS.iter().map(|p| (*p).to_owned()).collect()
    }

    /// Scan `n` shows the estate at epoch `n - 1`.
    fn scan(&mut self, ctx: &ScanContext<'_>, sink: &mut dyn ScanSink) -> Result<(), SourceError> {
        let epoch = ctx.scan_seq.saturating_sub(1);
        let (mut nodes, edges) = self.generate(ctx.interner, epoch, SCAN_BATCH);
        self.apply_effects(ctx.interner, &mut nodes);
        self.observed = Some(epoch_time(epoch));
        tracing::debug!(
            epoch,
            nodes = nodes.iter().map(NodeBatch::len).sum::<usize>(),
            edges = edges.iter().map(EdgeBatch::len).sum::<usize>(),
            "mock estate generated"
        );
        for b in nodes {
            sink.nodes(b);
        }
        for b in edges {
            sink.edges(b);
        }
        Ok(())
    }

    fn observed_at(&self) -> Option<u64> {
        self.observed
    }

    fn remediate(&mut self, r: &RemediateRequest<'_>) -> Option<Result<RemediateOutcome, SourceError>> {
        Some(Ok(self.effects.remediate(r.crn, r.action, r.properties, r.dry_run)))
    }

    fn apply_quarantine(
        &mut self,
        crn: &str,
        action: &str,
        _reason: &str,
    ) -> Option<Result<QuarantineOutcome, SourceError>> {
        Some(Ok(self.effects.quarantine(crn, action)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The estate takes slots until their chances add up to within half a
    /// node of the scale: a unit cut there, then no more units.
    #[test]
    fn the_cut_stops_within_half_a_node_of_the_scale() {
        let mut cut = Cut::new(0);
        assert_eq!(cut.take(&[1.0]), None, "an empty estate takes no unit");
        let mut cut = Cut::new(3);
        assert_eq!(cut.take(&[1.0, 1.0]), Some(2));
        assert_eq!(cut.take(&[1.0, 1.0, 1.0]), Some(1), "3 of 3: the unit ends there");
        assert_eq!(cut.take(&[1.0]), None);
        let mut cut = Cut::new(2);
        assert_eq!(
            cut.take(&[0.6, 0.6, 0.6, 0.6]),
            Some(3),
            "1.8 is within half a node of 2"
        );
        assert_eq!((cut.take(&[]), cut.acc), (None, f64::from(0.6f32) * 3.0));
    }

    /// Every node's tags are kept in key order, as a decoder keeps the
    /// tags it reads; and every kind of tag occurs.
    #[test]
    fn tags_come_in_key_order() {
        let interner = std::sync::Arc::new(Interner::new());
        let (nodes, _) = MockEstate::new(7, 3000).generate(&interner, 0, 1000);
        let mut g = svc_engine::Graph::new(interner.clone());
        g.ingest_nodes(&nodes, 1, 1);
        let mut keys = std::collections::BTreeSet::new();
        for n in g.nodes() {
            let tags: Vec<String> = n.tags().map(|(k, _)| interner.resolve(k).to_string()).collect();
            assert!(tags.is_sorted(), "{tags:?}");
            keys.extend(tags);
        }
        assert_eq!(keys.len(), 5, "{keys:?}");
    }

    /// Leaving names unformatted changes nothing a plan keeps: no unit's
    /// slots or their presence depend on a name's text.
    #[test]
    fn plans_without_names_equal_plans_with_them() {
        for seed in [1, 42, 100] {
            let interner = Interner::new();
            let syms = Syms::new(&interner, seed);
            for index in 0..400 {
                let quiet = names::planning(|| plan_unit(&syms, seed, index));
                let full = plan_unit(&syms, seed, index);
                assert_eq!(quiet.0, full.0);
                assert_eq!(quiet.1, full.1);
                assert_eq!(quiet.2, full.2, "seed {seed}, unit {index}");
            }
        }
    }
}

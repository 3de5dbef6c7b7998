//! Whether a machine (EC2 instance, GCE instance, Azure VM) is unused,
//! worked out once per machine and pass, and the words for it: what every
//! provider's rules about machines and the disks attached to them share.

use std::fmt;

use rayon::prelude::*;

use super::rule::{Hit, Why};
use super::units::{bytes, days, usd};
use super::view::{self, MachineName, MachineShard, Machines, Node, Unused};
use svc_graph::graph::visible;
use svc_graph::ids::{NodeId, Sym};

/// CPU below this average over 7 days, with network below
/// [`IDLE_NET_BYTES_7D`], makes a running machine idle.
pub const IDLE_CPU_PCT: f64 = 5.0;
/// Network bytes in and out over 7 days below which a machine moves nothing.
pub const IDLE_NET_BYTES_7D: f64 = 100_000_000.0;
/// Days a machine must have been stopped before it counts as forgotten.
pub const STOPPED_DAYS: u64 = 30;

impl Unused {
    pub(super) fn describe(self) -> impl fmt::Display {
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
    pub(super) fn build(ctx: &view::Ctx<'_>) -> Machines {
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

/// A disk attached to an unused machine, described by `facts`.
pub fn disk_on_unused_machine(n: &Node<'_>, why: &mut Why<'_>, facts: impl fmt::Display) -> Option<Hit> {
    let (machine, unused) = attached_machine(n)?;
    Some(why.hit(
        n.cost(),
        format_args!("attached to {machine}, {}; {facts}", unused.describe()),
    ))
}

/// "(m5.large spot, $35.04/mo)".
pub(super) fn machine_facts<'a>(n: &'a Node<'_>) -> impl fmt::Display + 'a {
    fmt::from_fn(move |f| {
        let k = n.keys();
        let size = [k.instance_type, k.machine_type, k.vm_size]
            .into_iter()
            .find_map(|key| n.str(key))
            .unwrap_or("machine");
        let spot = if n.str(k.lifecycle) == Some("spot") {
            " spot"
        } else {
            ""
        };
        write!(f, "({size}{spot}, {})", usd(n.cost()))
    })
}

//! The engine's own waste rules (DESIGN.md section 4 step 4): one pass in
//! parallel over the node shards. Each rule names the resource types it
//! reads, a condition on properties and edges, a risk score (built-in rules
//! may use 80 to 100; plugins cannot), a suggested action and what removing
//! or changing the resource saves a month.
//!
//! - [`Rule`] (`rule`): what a rule is, what it finds ([`Hit`]), where it
//!   writes why ([`Why`]), which rules run ([`Selection`]).
//! - [`rules`] (`catalogue`): every rule, one module per provider (`aws`,
//!   `gcp`, `azure`, `k8s`), each its `RULES`.
//! - `machine`, `storage`, `units`: what the providers' rules share:
//!   whether a machine is unused ([`unused_machine`]), stale storage, and
//!   money, sizes and days as reasons write them.
//! - [`run`], [`decide`], [`render`] (`pass`): the pass over the visible
//!   nodes; [`cache`]: the answers of the scan before, kept for the nodes
//!   nothing they read changed.
//! - [`view`]: what a rule sees of a node: decoded properties, its
//!   effective cost (reported, else priced from [`crate::prices`]), its
//!   neighbours, and the time the estate was observed.
//! - [`ignore`]: the `svc:ignore` tag, honoured before any rule runs.

mod aws;
mod azure;
pub mod cache;
mod catalogue;
mod gcp;
pub mod ignore;
mod k8s;
mod machine;
mod pass;
mod rule;
mod storage;
mod units;
pub mod view;

pub use cache::Cache;
pub use catalogue::{rule, rules};
pub use machine::{
    IDLE_CPU_PCT, IDLE_NET_BYTES_7D, STOPPED_DAYS, attached_machine, disk_on_unused_machine, unused_machine,
};
pub use pass::{BuiltinOutcome, Decided, RuleHit, decide, render, run};
pub use rule::{GRACE_DAYS, Hit, Rule, RuleKind, Selection, Why};
pub use storage::{STALE_DAYS, storage_facts};
pub use units::{bytes, days, usd};

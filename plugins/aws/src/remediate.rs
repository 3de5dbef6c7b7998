//! The `Remediator` service over AWS: `Remediate` carries out the actions
//! the built-in AWS rules propose, and their inverses, on the resource a
//! CRN names (either form; the region and id come from it, its account
//! must be the credentials'). Every action honours `dry_run` and may be
//! retried after a crash: it looks at the resource first and does only
//! what is left to do (README.md, "Remediation").
//!
//!
//! `target` (the target, the answer, the helpers every action uses),
//! `service` (the service, and which action runs for which resource
//! type), the actions in `instance` (stop, start), `volume` (snapshot,
//! delete, restore), `deletes` (Elastic IPs, snapshots, NAT gateways, load
//! balancers, log groups) and `isolation` (a quarantine's `ISOLATE` and
//! its revert, which `service` runs for `restore`).

mod deletes;
mod instance;
mod isolation;
mod service;
mod target;
mod volume;

pub use deletes::{address, load_balancer_of, log_group_of, nat_gateway_of, snapshot_of};
pub use instance::{Power, describe_instance, find_instance, power, state_of};
pub use isolation::isolate;
pub use service::{AwsRemediator, act};
pub use target::{Target, is_gone, why};
pub use volume::{describe_volume, snapshots_of};

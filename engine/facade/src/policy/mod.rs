//! Policy rules ([`svc_policy`]), the engine's policy subsystem over them
//! ([`policies`]) and the scan's `engine.policy` phase.

pub mod phase;
pub(crate) mod policies;

pub use phase::{DryRun, PolicyReport, blocked_by, dry_run};
pub(crate) use policies::Policies;
pub use svc_policy::*;

//! Policy rules ([`svc_policy`]) and the scan's `engine.policy` phase over them.

pub mod phase;

pub use phase::{DryRun, PolicyReport, blocked_by, dry_run};
pub use svc_policy::*;

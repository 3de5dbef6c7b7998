//! The remediation pipeline ([`svc_remediation`]) and what the engine does
//! with it ([`ops`]): the `engine.sau` pass of a scan, the operator actions,
//! sagas, quarantine, revert, isolation.

mod actions;
pub mod ops;

pub use svc_remediation::*;

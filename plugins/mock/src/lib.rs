//! The mock provider plugin's parts, for its binary (`main.rs`) and for
//! benches that measure them without a daemon: the mock estate as
//! `ScanResponse`s ([`estate::stream`]), its actions and their simulated
//! effects, the failures tests inject, and the provider service.

pub mod actions;
pub mod estate;
pub mod fail;
pub mod provider;

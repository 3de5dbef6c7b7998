//! Analysis passes of the scan that run after the heuristics: alike
//! resources ([`pattern`]), the cross-provider linker ([`linker`]),
//! observed traffic ([`traffic`]) and formal verification ([`reach`]).

pub mod linker;
pub mod pattern;
pub mod reach;
pub mod traffic;

//! Analysis passes of the scan that run after the heuristics: the
//! cross-provider linker ([`linker`]), observed traffic ([`traffic`]) and
//! formal verification ([`reach`]).

pub mod linker;
pub mod reach;
pub mod traffic;

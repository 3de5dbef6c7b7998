//! Analysis passes of the scan that run after the heuristics: formal
//! verification ([`reach`]) and the cross-provider linker ([`linker`]).

pub mod linker;
pub mod reach;

//! Analysis passes over the whole graph that run after the heuristics phase.

pub mod pattern;

//! Scan pipeline.

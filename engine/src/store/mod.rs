//! Stores.

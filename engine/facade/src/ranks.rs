//! The engine's lock order (ARCHITECTURE.md, "Lock order"), as ranks: a
//! thread takes locks in increasing rank, and debug builds check it
//! ([`svc_graph::sync`]). Each subsystem's locks are private to it; the
//! ranks interleave across subsystems and are kept here, in one order.
//! The remediation state's rank is its crate's
//! ([`svc_remediation::state::STATE_RANK`]); the per-CRN saga locks come
//! before all of these and are not ranked.

use svc_graph::sync::Rank;

// `Sources` (sources.rs).
pub const SOURCES: Rank = Rank::new(10, "sources");
pub const ANALYZERS: Rank = Rank::new(11, "analyzers");
pub const PENDING_SOURCES: Rank = Rank::new(12, "pending_sources");
pub const PENDING_ANALYZERS: Rank = Rank::new(13, "pending_analyzers");
// `Findings` (findings.rs).
pub const RULE_CACHE: Rank = Rank::new(20, "rule_cache");
// `ScanState` (scan/state.rs).
pub const PERSISTED_SYMBOLS: Rank = Rank::new(25, "persisted_symbols");
// `Core` (graph_core.rs).
pub const GRAPH: Rank = Rank::new(30, "graph");
// `Findings`.
pub const LINK_CACHE: Rank = Rank::new(40, "link_cache");
pub const LINKS: Rank = Rank::new(41, "links");
pub const FINDINGS: Rank = Rank::new(42, "findings");
pub const PATTERN: Rank = Rank::new(43, "pattern");
// `ScanState`.
pub const SNAPSHOT_WRITER: Rank = Rank::new(45, "snapshot_writer");
// `Remediation` (svc-remediation).
pub use svc_remediation::state::STATE_RANK as REMEDIATION_STATE;
// Leaves: nothing but a store write or a ledger append is taken under one.
// `Findings`: `rules`, `assessment`; `Sources`: `source_config`, `served`,
// `answered`, `before_scan`, `limits`; `ScanState`: `last_report`,
// `listeners`, `unannounced`, `scan_progress` (then `source_progress`); `Policies` (policy/policies.rs): `packs`.
pub const RULES: Rank = Rank::new(60, "rules");
pub const ASSESSMENT: Rank = Rank::new(61, "assessment");
pub const SOURCE_CONFIG: Rank = Rank::new(62, "source_config");
pub const LAST_REPORT: Rank = Rank::new(63, "last_report");
pub const LISTENERS: Rank = Rank::new(64, "listeners");
pub const SERVED: Rank = Rank::new(65, "served");
pub const ANSWERED: Rank = Rank::new(66, "answered");
pub const PACKS: Rank = Rank::new(67, "packs");
pub const BEFORE_SCAN: Rank = Rank::new(68, "before_scan");
pub const LIMITS: Rank = Rank::new(69, "limits");
pub const UNANNOUNCED: Rank = Rank::new(70, "unannounced");
// `ScanState`'s progress (scan/progress.rs): read by the API at any time.
pub const SCAN_PROGRESS: Rank = Rank::new(71, "scan_progress");
pub const SOURCE_PROGRESS: Rank = Rank::new(72, "source_progress");

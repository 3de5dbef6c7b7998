//! What the analysis passes of the last scan found, and what they keep
//! from one scan to the next.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use svc_graph::sync::{Mutex, MutexGuard, RwLock};

use crate::analysis::linker::{self, LinkReport};
use crate::analysis::pattern::PatternReport;
use crate::analysis::reach::Assessment;
use crate::heuristics::FindingSet;
use crate::heuristics::builtin::{Cache as RuleCache, Selection};
use crate::ranks;

/// Locks `rule_cache` (rank 20), `link_cache` (40), `links` (41),
/// `findings` (42), `pattern` (43); `rules` and `assessment` are leaves.
pub(crate) struct Findings {
    /// Which built-in rules run.
    rules: RwLock<Selection>,
    /// Each node's built-in rule answer of the last scan, with what it read.
    rule_cache: Mutex<RuleCache>,
    /// What each node offered and asked the linker in the last scan.
    link_cache: Mutex<linker::Cache>,
    /// What the ghost linker did in the last scan.
    links: RwLock<Arc<LinkReport>>,
    /// Findings of the last scan.
    findings: RwLock<Arc<FindingSet>>,
    /// What the pattern phase of the last scan found.
    pattern: RwLock<Arc<PatternReport>>,
    /// Reachability and proof paths of the last scan; after a restart,
    /// worked out on first use.
    assessment: RwLock<Option<Arc<Assessment>>>,
    /// Whether formal verification runs (`oracle.enabled`).
    oracle: AtomicBool,
}

impl Findings {
    pub(crate) fn new() -> Findings {
        Findings {
            rules: RwLock::new(ranks::RULES, Selection::default()),
            rule_cache: Mutex::new(ranks::RULE_CACHE, Default::default()),
            link_cache: Mutex::new(ranks::LINK_CACHE, Default::default()),
            links: RwLock::new(ranks::LINKS, Arc::new(LinkReport::default())),
            findings: RwLock::new(ranks::FINDINGS, Arc::new(FindingSet::default())),
            pattern: RwLock::new(ranks::PATTERN, Arc::new(PatternReport::default())),
            assessment: RwLock::new(ranks::ASSESSMENT, None),
            oracle: AtomicBool::new(true),
        }
    }

    /// Forgets everything kept by node id or row, as a restart leaves it
    /// (the graph was compacted): the caches, the last findings, links,
    /// patterns and assessment. The next scan works them out from scratch.
    /// The caller holds `rule_cache` (taken before the graph).
    pub(crate) fn forget_rows(&self, rule_cache: &mut RuleCache) {
        *rule_cache = RuleCache::default();
        *self.link_cache.lock() = linker::Cache::default();
        *self.links.write() = Arc::new(LinkReport::default());
        self.set_last(FindingSet::default());
        *self.pattern.write() = Arc::new(PatternReport::default());
        *self.assessment.write() = None;
    }

    /// The findings of the last scan.
    pub(crate) fn last(&self) -> Arc<FindingSet> {
        self.findings.read().clone()
    }

    pub(crate) fn set_last(&self, set: FindingSet) {
        let old = std::mem::replace(&mut *self.findings.write(), Arc::new(set));
        // Hundreds of thousands of findings take a while to free; the scan
        // does not wait for it.
        let _ = std::thread::Builder::new()
            .name("svc-free".into())
            .spawn(move || drop(old));
    }

    /// Changes the findings of the last scan in place (copied only when a
    /// reader still holds them).
    pub(crate) fn update(&self, f: impl FnOnce(&mut FindingSet)) {
        let mut guard = self.findings.write();
        f(Arc::make_mut(&mut guard));
    }

    pub(crate) fn set_rule_selection(&self, selection: Selection) {
        *self.rules.write() = selection;
    }

    pub(crate) fn rule_selection(&self) -> Selection {
        self.rules.read().clone()
    }

    pub(crate) fn lock_rule_cache(&self) -> MutexGuard<'_, RuleCache> {
        self.rule_cache.lock()
    }

    pub(crate) fn lock_link_cache(&self) -> MutexGuard<'_, linker::Cache> {
        self.link_cache.lock()
    }

    pub(crate) fn links(&self) -> Arc<LinkReport> {
        self.links.read().clone()
    }

    pub(crate) fn set_links(&self, l: LinkReport) {
        *self.links.write() = Arc::new(l);
    }

    pub(crate) fn pattern(&self) -> Arc<PatternReport> {
        self.pattern.read().clone()
    }

    pub(crate) fn set_pattern(&self, report: PatternReport) {
        *self.pattern.write() = Arc::new(report);
    }

    /// The last scan's assessment, when one is in memory.
    pub(crate) fn assessment(&self) -> Option<Arc<Assessment>> {
        self.assessment.read().clone()
    }

    /// Keeps `a` unless an assessment was set meanwhile; returns the one kept.
    pub(crate) fn assessment_or(&self, a: Assessment) -> Arc<Assessment> {
        self.assessment.write().get_or_insert(Arc::new(a)).clone()
    }

    pub(crate) fn set_assessment(&self, a: Assessment) {
        *self.assessment.write() = Some(Arc::new(a));
    }

    pub(crate) fn set_oracle_enabled(&self, on: bool) {
        self.oracle.store(on, Ordering::Release);
    }

    pub(crate) fn oracle_enabled(&self) -> bool {
        self.oracle.load(Ordering::Acquire)
    }
}

//! The catalogue: every built-in rule, one module per provider.

use super::rule::Rule;
use super::{aws, azure, gcp, k8s};

/// Every built-in rule.
pub fn rules() -> impl Iterator<Item = &'static Rule> {
    aws::RULES
        .iter()
        .chain(gcp::RULES)
        .chain(azure::RULES)
        .chain(k8s::RULES)
}

/// A rule by name.
pub fn rule(name: &str) -> Option<&'static Rule> {
    rules().find(|r| r.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heuristics::builtin::RuleKind;

    #[test]
    fn catalogue_is_complete_and_consistent() {
        let all: Vec<&Rule> = rules().collect();
        assert!(all.len() >= 30, "{} rules", all.len());
        let mut names: Vec<&str> = all.iter().map(|r| r.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all.len(), "rule names are unique");
        for r in &all {
            assert!(
                !r.types.is_empty() && r.types.iter().all(|t| t.contains(':')),
                "{}",
                r.name
            );
            assert!(
                ["aws", "gcp", "azure", "kubernetes"].contains(&r.provider),
                "{}",
                r.name
            );
            assert!(
                [
                    "stop",
                    "start",
                    "delete",
                    "snapshot_delete",
                    "throttle",
                    "pause",
                    "resize",
                    "release",
                    "quarantine"
                ]
                .contains(&r.action),
                "{}",
                r.name
            );
            match r.kind {
                RuleKind::Waste => assert!((80..=100).contains(&r.risk), "{}", r.name),
                RuleKind::Optimize => assert!(r.risk < 80, "{}", r.name),
            }
            assert!(!r.condition.is_empty() && !r.suggestion.is_empty(), "{}", r.name);
        }
        for p in ["aws", "gcp", "azure", "kubernetes"] {
            assert!(all.iter().filter(|r| r.provider == p).count() >= 3, "{p}");
        }
    }
}

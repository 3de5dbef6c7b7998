//! What remediation and quarantine did to the simulated estate: a state
//! per CRN that later scans show (a deleted resource is gone, a stopped one
//! reports `stopped`). Kept in a JSON file under the data directory when
//! the daemon gives one, so the simulated cloud outlives a daemon restart
//! as a real one would.
//!
//! Failure switches for tests, read once from the environment:
//! `SVC_MOCK_FAIL_ACTIONS=delete,release` makes those actions fail, and
//! `SVC_MOCK_HANG_ACTIONS=delete` makes them block forever (to stop the
//! daemon mid-saga). Dry runs are never hung or failed by them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use svc_engine::Crn;
use svc_engine::scan::{QuarantineOutcome, RemediateOutcome};
use svc_engine::store::atomic::write_bytes_atomic;

/// Remediate actions the simulated estate accepts, with the state each
/// leaves; `None` removes the resource.
fn effect_of(action: &str) -> Option<Option<&'static str>> {
    Some(match action {
        "stop" => Some("stopped"),
        "start" => Some("running"),
        "throttle" => Some("throttled"),
        "pause" => Some("paused"),
        "resize" => Some("resized"),
        "delete" | "snapshot_delete" | "release" => None,
        _ => return None,
    })
}

/// The simulated effects and the file that keeps them.
#[derive(Debug, Default)]
pub struct Effects {
    /// CRN (graph form) -> state; `deleted` hides the resource.
    states: BTreeMap<String, String>,
    path: Option<PathBuf>,
    applied: u64,
    fail: Vec<String>,
    hang: Vec<String>,
}

const AS_SCANNED: &str = "as scanned";
const DELETED: &str = "deleted";

fn list(var: &str) -> Vec<String> {
    std::env::var(var)
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

impl Effects {
    /// Effects kept in `path` (loaded if it exists; an unreadable file is
    /// logged and starts empty).
    pub fn open(path: &Path) -> Effects {
        let states = match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice::<BTreeMap<String, String>>(&bytes).unwrap_or_else(|e| {
                tracing::warn!(path = %path.display(), error = %e, "mock estate effects unreadable; starting without them");
                BTreeMap::new()
            }),
            Err(_) => BTreeMap::new(),
        };
        Effects {
            states,
            path: Some(path.to_owned()),
            ..Effects::in_memory()
        }
    }

    /// Effects held in memory only.
    pub fn in_memory() -> Effects {
        Effects {
            fail: list("SVC_MOCK_FAIL_ACTIONS"),
            hang: list("SVC_MOCK_HANG_ACTIONS"),
            ..Effects::default()
        }
    }

    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    /// Every resource an action changed, with its state.
    pub fn states(&self) -> &BTreeMap<String, String> {
        &self.states
    }

    fn save(&self) -> Result<(), String> {
        let Some(path) = &self.path else { return Ok(()) };
        let bytes = serde_json::to_vec_pretty(&self.states).map_err(|e| e.to_string())?;
        write_bytes_atomic(path, &bytes)
            .map_err(|e| format!("cannot record the simulated effect in {}: {e}", path.display()))
    }

    fn set(&mut self, crn: &str, state: Option<&str>) -> Result<String, String> {
        let previous = self.states.get(crn).cloned().unwrap_or_else(|| AS_SCANNED.to_owned());
        match state {
            Some(AS_SCANNED) => self.states.remove(crn),
            Some(s) => self.states.insert(crn.to_owned(), s.to_owned()),
            None => self.states.insert(crn.to_owned(), DELETED.to_owned()),
        };
        self.applied += 1;
        self.save()?;
        Ok(previous)
    }

    /// One `Remediate` call on the simulated estate.
    pub fn remediate(
        &mut self,
        crn: &str,
        action: &str,
        properties: &BTreeMap<String, String>,
        dry_run: bool,
    ) -> RemediateOutcome {
        let failed = |error: String| RemediateOutcome {
            success: false,
            status: "failed".into(),
            error,
            snapshot: BTreeMap::new(),
        };
        let crn = match Crn::parse(crn) {
            Ok(c) => c.to_string(),
            Err(e) => return failed(e.to_string()),
        };
        // `restore` (and a compensating `start`/`stop`) put back the state
        // the step it undoes recorded.
        let target = match (action, properties.get("previous_state")) {
            ("restore", Some(p)) => Some(p.as_str()),
            ("restore", None) => Some(AS_SCANNED),
            ("start" | "stop", Some(p)) => Some(p.as_str()),
            _ => match effect_of(action) {
                Some(state) => state,
                None => return failed(format!("unknown action {action:?}")),
            },
        };
        let current = self.states.get(&crn).map(String::as_str);
        if current == Some(DELETED) && action != "restore" {
            return failed(format!("resource {crn} is deleted"));
        }
        if dry_run {
            return RemediateOutcome {
                success: true,
                status: "validated".into(),
                ..RemediateOutcome::default()
            };
        }
        if self.hang.iter().any(|a| a == action) {
            tracing::warn!(%crn, action, "SVC_MOCK_HANG_ACTIONS: this action never returns");
            loop {
                std::thread::park();
            }
        }
        if self.fail.iter().any(|a| a == action) {
            return failed(format!("{action} of {crn} failed (SVC_MOCK_FAIL_ACTIONS)"));
        }
        match self.set(&crn, target) {
            Ok(previous) => RemediateOutcome {
                success: true,
                status: target.unwrap_or(DELETED).to_owned(),
                error: String::new(),
                snapshot: BTreeMap::from([
                    ("snapshot_id".to_owned(), format!("snap-mock-{:08}", self.applied)),
                    ("previous_state".to_owned(), previous),
                ]),
            },
            Err(e) => failed(e),
        }
    }

    /// One `ApplyQuarantine` call.
    pub fn quarantine(&mut self, crn: &str, action: &str) -> QuarantineOutcome {
        let state = match action {
            "ISOLATE" => Some("isolated"),
            "STOP" => Some("stopped"),
            "DELETE" => None,
            other => {
                return QuarantineOutcome {
                    success: false,
                    message: format!("unknown quarantine action {other:?}"),
                };
            }
        };
        let crn = match Crn::parse(crn) {
            Ok(c) => c.to_string(),
            Err(e) => {
                return QuarantineOutcome {
                    success: false,
                    message: e.to_string(),
                };
            }
        };
        match self.set(&crn, state) {
            Ok(_) => QuarantineOutcome {
                success: true,
                message: format!("resource {}", state.unwrap_or(DELETED)),
            },
            Err(e) => QuarantineOutcome {
                success: false,
                message: e,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CRN: &str = "crn:svc:aws:us-east-1:ec2:instance:1:i-1";

    #[test]
    fn steps_and_their_inverses() {
        let mut fx = Effects::default();
        let none = BTreeMap::new();
        let stop = fx.remediate(CRN, "stop", &none, false);
        assert!(stop.success);
        assert_eq!(stop.snapshot["previous_state"], AS_SCANNED);
        assert_eq!(fx.states()[CRN], "stopped");
        let del = fx.remediate(CRN, "delete", &none, false);
        assert_eq!(fx.states()[CRN], DELETED);
        assert!(
            !fx.remediate(CRN, "stop", &none, true).success,
            "a deleted resource takes only restore"
        );
        // Undo in reverse with each step's snapshot.
        assert!(fx.remediate(CRN, "restore", &del.snapshot, false).success);
        assert_eq!(fx.states()[CRN], "stopped");
        assert!(fx.remediate(CRN, "start", &stop.snapshot, false).success);
        assert!(fx.is_empty(), "back as scanned: {:?}", fx.states());
        assert!(!fx.remediate(CRN, "explode", &none, false).success);
        assert!(!fx.remediate("not a crn", "stop", &none, false).success);
    }

    #[test]
    fn effects_survive_in_their_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mock-estate.json");
        let mut fx = Effects::open(&path);
        assert!(fx.quarantine(CRN, "ISOLATE").success);
        assert!(!fx.quarantine(CRN, "NUKE").success);
        let again = Effects::open(&path);
        assert_eq!(again.states()[CRN], "isolated");
        std::fs::write(&path, b"{not json").unwrap();
        assert!(Effects::open(&path).is_empty());
    }
}

//! Simulated effects of remediation and quarantine: a map from CRN to the
//! state an action left it in. Nothing leaves the process.

use std::collections::HashMap;

/// Remediate actions and the state each leaves the resource in.
pub const REMEDIATE_ACTIONS: [(&str, &str); 9] = [
    ("stop", "stopped"),
    ("delete", "deleted"),
    ("snapshot_delete", "deleted"),
    ("release", "deleted"),
    ("resize", "resized"),
    ("throttle", "throttled"),
    ("pause", "paused"),
    ("start", "running"),
    ("restore", "restored"),
];

/// Quarantine actions and the state each leaves the resource in.
pub const QUARANTINE_ACTIONS: [(&str, &str); 3] = [("ISOLATE", "isolated"), ("STOP", "stopped"), ("DELETE", "deleted")];

pub fn remediate_status(action: &str) -> Result<&'static str, String> {
    lookup(&REMEDIATE_ACTIONS, action).ok_or_else(|| {
        format!(
            "unknown action {action:?}: expected one of {}",
            REMEDIATE_ACTIONS.map(|(a, _)| a).join(", ")
        )
    })
}

pub fn quarantine_status(action: &str) -> Result<&'static str, String> {
    lookup(&QUARANTINE_ACTIONS, action).ok_or_else(|| {
        format!(
            "unknown quarantine action {action:?}: expected one of {}",
            QUARANTINE_ACTIONS.map(|(a, _)| a).join(", ")
        )
    })
}

fn lookup(table: &[(&str, &'static str)], action: &str) -> Option<&'static str> {
    table.iter().find(|(a, _)| *a == action).map(|(_, s)| *s)
}

/// The simulated states, and a counter that makes snapshot ids unique.
#[derive(Default, Debug)]
pub struct Effects {
    states: HashMap<String, String>,
    applied: u64,
}

/// FNV-1a, for short stable snapshot ids.
fn fnv(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in *p {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h ^= 0xff;
    }
    h
}

impl Effects {
    pub fn states(&self) -> &HashMap<String, String> {
        &self.states
    }

    pub fn state(&self, crn: &str) -> Option<&str> {
        self.states.get(crn).map(String::as_str)
    }

    /// Checks that `action` may run on a resource in its current simulated
    /// state: a deleted resource only accepts `restore`.
    pub fn validate(&self, crn: &str, action: &str) -> Result<(), String> {
        match self.state(crn) {
            Some("deleted") if action != "restore" => Err(format!("resource {crn:?} is deleted")),
            _ => Ok(()),
        }
    }

    /// Records the new state and returns the snapshot taken before it.
    pub fn apply(&mut self, crn: &str, action: &str, status: &str) -> HashMap<String, String> {
        self.applied += 1;
        let id = fnv(&[crn.as_bytes(), action.as_bytes(), &self.applied.to_le_bytes()]);
        let previous = self.states.insert(crn.to_owned(), status.to_owned());
        let mut snapshot = HashMap::new();
        snapshot.insert("snapshot_id".to_owned(), format!("snap-{id:016x}"));
        snapshot.insert(
            "previous_state".to_owned(),
            previous.unwrap_or_else(|| "as scanned".into()),
        );
        snapshot
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_and_states() {
        assert_eq!(remediate_status("stop"), Ok("stopped"));
        assert_eq!(quarantine_status("ISOLATE"), Ok("isolated"));
        assert!(remediate_status("explode").is_err_and(|e| e.contains("unknown action \"explode\"")));
        assert!(quarantine_status("isolate").is_err());

        let mut fx = Effects::default();
        let a = fx.apply("crn:x", "stop", "stopped");
        let b = fx.apply("crn:x", "delete", "deleted");
        assert_ne!(a["snapshot_id"], b["snapshot_id"]);
        assert_eq!(b["previous_state"], "stopped");
        assert!(fx.validate("crn:x", "stop").is_err());
        assert!(fx.validate("crn:x", "restore").is_ok());
    }
}

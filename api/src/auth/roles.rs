//! Roles and the role each route needs: an explicit table of every
//! `(method, path)` the server answers, so a new route cannot be served
//! before someone decides who may call it (a test checks the table against
//! [`crate::ROUTES`]).

use serde::{Deserialize, Serialize};

/// What a token may do; each role may do everything the roles before it may.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Reads only.
    Viewer,
    /// Decides remediations, quarantines, ignores, edits policies, triggers scans.
    Operator,
    /// Configuration, plugins, tokens, ledger maintenance.
    Admin,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Viewer, Role::Operator, Role::Admin];

    pub const fn name(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
            Role::Admin => "admin",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.name() == s)
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Who may call a route.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// Anyone, without credentials (sign-in).
    Open,
    /// A token, or a session, of at least this role.
    Least(Role),
}

use Access::{Least, Open};
use Role::{Admin, Operator, Viewer};

/// Every guarded route, as `(method, path)` in OpenAPI path syntax, with
/// who may call it. `HEAD` is looked up as `GET`.
pub const ROUTE_ACCESS: &[(&str, &str, Access)] = &[
    // The WebSocket ledger stream.
    ("GET", "/events", Least(Viewer)),
    // Sessions and tokens.
    ("POST", "/api/v1/session", Open),
    ("GET", "/api/v1/session", Least(Viewer)),
    ("DELETE", "/api/v1/session", Least(Viewer)),
    ("GET", "/api/v1/tokens", Least(Admin)),
    ("POST", "/api/v1/tokens", Least(Admin)),
    ("DELETE", "/api/v1/tokens/{name}", Least(Admin)),
    // The assistant: asking reads only.
    ("POST", "/api/v1/cortex/assimilate", Least(Viewer)),
    ("GET", "/api/v1/ai/providers", Least(Viewer)),
    ("POST", "/api/v1/mcp", Least(Viewer)),
    // Remediation.
    ("GET", "/api/v1/remediation/queue", Least(Viewer)),
    ("GET", "/api/v1/plan", Least(Viewer)),
    // Infrastructure as code.
    ("GET", "/api/v1/drift/report", Least(Viewer)),
    ("GET", "/api/v1/provenance", Least(Viewer)),
    ("POST", "/api/v1/remediation/approve", Least(Operator)),
    ("POST", "/api/v1/remediation/reject", Least(Operator)),
    ("POST", "/api/v1/remediation/override", Least(Operator)),
    ("POST", "/api/v1/remediation/move", Least(Operator)),
    ("POST", "/api/v1/remediation/bulk", Least(Operator)),
    ("POST", "/api/v1/remediation/quarantine", Least(Operator)),
    ("POST", "/api/v1/remediation/revert", Least(Operator)),
    ("GET", "/api/v1/isolation", Least(Viewer)),
    ("POST", "/api/v1/isolation", Least(Operator)),
    ("DELETE", "/api/v1/isolation/{crn}", Least(Operator)),
    // Graph.
    ("GET", "/api/v1/topology", Least(Viewer)),
    ("GET", "/api/v1/graph", Least(Viewer)),
    ("GET", "/api/v1/graph/topology", Least(Viewer)),
    ("GET", "/api/v1/graph/at", Least(Viewer)),
    ("GET", "/api/v1/graph/diff", Least(Viewer)),
    ("GET", "/api/v1/graph/stats", Least(Viewer)),
    ("GET", "/api/v1/graph/breakdown", Least(Viewer)),
    ("GET", "/api/v1/graph/nodes", Least(Viewer)),
    ("GET", "/api/v1/nodes", Least(Viewer)),
    ("GET", "/api/v1/graph/nodes/{crn}", Least(Viewer)),
    ("GET", "/api/v1/graph/nodes/{crn}/edges", Least(Viewer)),
    ("GET", "/api/v1/graph/nodes/{crn}/versions", Least(Viewer)),
    ("GET", "/api/v1/graph/blast-radius/{crn}", Least(Viewer)),
    // Scans and signals.
    ("POST", "/api/v1/engine/scan", Least(Operator)),
    ("GET", "/api/v1/engine/scan/progress", Least(Viewer)),
    ("POST", "/api/v1/sync", Least(Operator)),
    ("POST", "/api/v1/traffic/ingest", Least(Operator)),
    ("GET", "/api/v1/traffic/edges", Least(Viewer)),
    ("GET", "/api/v1/anomalies", Least(Viewer)),
    ("GET", "/api/v1/waste-ledger", Least(Viewer)),
    ("GET", "/api/v1/heuristics/status", Least(Viewer)),
    ("GET", "/api/v1/solver/results", Least(Viewer)),
    ("GET", "/api/v1/oracle/{crn}", Least(Viewer)),
    // History and the ledger.
    ("GET", "/api/v1/history", Least(Viewer)),
    ("GET", "/api/v1/history/summary", Least(Viewer)),
    ("GET", "/api/v1/history/resource", Least(Viewer)),
    ("GET", "/api/v1/history/sessions", Least(Viewer)),
    ("POST", "/api/v1/history/prune", Least(Admin)),
    ("GET", "/api/v1/ledger/verify", Least(Viewer)),
    ("POST", "/api/v1/ledger/export", Least(Admin)),
    // Policies; a dry run changes nothing.
    ("GET", "/api/v1/policies", Least(Viewer)),
    ("POST", "/api/v1/policies", Least(Operator)),
    ("DELETE", "/api/v1/policies/{id}", Least(Operator)),
    ("POST", "/api/v1/policies/toggle", Least(Operator)),
    ("POST", "/api/v1/policies/reorder", Least(Operator)),
    ("POST", "/api/v1/policies/dry-run", Least(Viewer)),
    ("GET", "/api/v1/policies/mesh", Least(Viewer)),
    // Configuration and plugins (the configuration is answered redacted).
    ("GET", "/api/v1/config", Least(Viewer)),
    ("PUT", "/api/v1/config", Least(Admin)),
    // A test message changes nothing and shows no secret.
    ("POST", "/api/v1/config/slack-test", Least(Operator)),
    ("GET", "/api/v1/plugins", Least(Viewer)),
    ("POST", "/api/v1/plugins/toggle", Least(Admin)),
    ("POST", "/api/v1/plugins/install", Least(Admin)),
    // The registry: reading it is a viewer's, changing what runs an admin's.
    ("GET", "/api/v1/registry/search", Least(Viewer)),
    ("GET", "/api/v1/registry/installed", Least(Viewer)),
    ("POST", "/api/v1/registry/install", Least(Admin)),
    ("POST", "/api/v1/registry/remove", Least(Admin)),
    ("POST", "/api/v1/registry/refresh", Least(Admin)),
];

/// Who may call `method` on the route matched as `path`. A pair the table
/// does not list (an unknown route or method, answered 404 or 405) needs
/// an admin: nothing is reachable by default.
pub fn access(method: &str, path: &str) -> Access {
    let method = if method.eq_ignore_ascii_case("HEAD") {
        "GET"
    } else {
        method
    };
    ROUTE_ACCESS
        .iter()
        .find(|(m, p, _)| m.eq_ignore_ascii_case(method) && *p == path)
        .map_or(Least(Admin), |(_, _, a)| *a)
}

/// The least role `method` on `path` needs, for the OpenAPI document;
/// `None` for an open route.
pub fn least_role(method: &str, path: &str) -> Option<Role> {
    match access(method, path) {
        Open => None,
        Least(r) => Some(r),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_has_an_access_rule_and_every_rule_a_route() {
        let mut routes: Vec<(&str, &str)> = crate::ROUTES.iter().copied().collect();
        routes.retain(|(_, p)| !crate::openapi::OPEN_ROUTES.contains(p));
        for (m, p) in &routes {
            assert!(
                ROUTE_ACCESS.iter().any(|(rm, rp, _)| rm == m && rp == p),
                "{m} {p} has no entry in ROUTE_ACCESS: decide which role it needs"
            );
        }
        for (m, p, _) in ROUTE_ACCESS {
            assert!(
                routes.contains(&(*m, *p)),
                "ROUTE_ACCESS lists {m} {p}, which is not a route"
            );
        }
    }

    #[test]
    fn roles_are_ordered_and_named() {
        assert!(Role::Viewer < Role::Operator && Role::Operator < Role::Admin);
        for r in Role::ALL {
            assert_eq!(Role::parse(r.name()), Some(r));
        }
        assert_eq!(Role::parse("root"), None);
        assert_eq!(access("HEAD", "/api/v1/graph"), Least(Viewer));
        assert_eq!(access("PATCH", "/api/v1/config"), Least(Admin));
    }
}

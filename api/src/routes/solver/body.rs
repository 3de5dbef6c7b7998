//! Response bodies of the formal-verification routes. Fields are declared
//! in the order they are written: by name.

use serde::Serialize;
use svc_engine::analysis::reach;
use utoipa::ToSchema;

use crate::wire::{Crn, Reachability, Relation, listed_str};

listed_str! {
    /// A cross-provider matching rule of the ghost linker.
    LinkRule ["k8s-provider-id", "dns-target", "role-assume", "shared-ip"]
}

listed_str! {
    InterruptionFrequency ["<5%", "5-10%", "10-15%", "15-20%", ">20%"]
}

/// What one ghost-linker rule matched.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkRuleStats {
    pub matched: u64,
    /// Matches a provider already reports as an edge.
    pub reported: u64,
    pub rule: LinkRule,
}

/// What the ghost linker added and retired in the last scan.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GhostLinker {
    pub added: u64,
    pub retired: u64,
    pub rules: Vec<LinkRuleStats>,
}

/// A node the reachability analysis judged.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SolverNode {
    pub cost_usd_mo: f64,
    pub crn: Crn,
    pub entry_point: bool,
    pub is_waste: bool,
    /// Edges on the proof path; 0 for an entry point, null when not reachable.
    #[schema(required = true)]
    pub proof_hops: Option<usize>,
    pub reachability: Reachability,
    #[schema(minimum = 0, maximum = 100)]
    pub risk_score: f64,
    #[serde(rename = "type")]
    pub ty: String,
}

/// `GET /api/v1/solver/results`: the reachability analysis of the last
/// scan with its confidence, and the nodes it judged, riskiest first.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SolverResults {
    /// When the analysis ran; null before the first.
    #[schema(required = true, format = DateTime)]
    pub computed_at: Option<String>,
    /// Share of active nodes with a known reachability.
    #[schema(minimum = 0, maximum = 1)]
    pub confidence: f64,
    pub duration_ms: u64,
    /// `false` when `oracle.enabled` is off: every node is `unknown` and risk 0.
    pub enabled: bool,
    /// Public addresses, load balancers, exposed Kubernetes services and ingresses, DNS records,
    /// API gateways.
    pub entry_points: u64,
    pub failed_providers: Vec<String>,
    #[schema(inline)]
    pub ghost_linker: GhostLinker,
    /// Nodes whose removal risk is 70 or more.
    pub high_risk: u64,
    /// Nodes passing the filters (`nodes` holds the first `limit`).
    pub matched: u64,
    pub nodes: Vec<SolverNode>,
    pub reachable: u64,
    pub scan_seq: u64,
    pub spot_machines: u64,
    pub unknown: u64,
    pub unreachable: u64,
}

/// The parts of the removal risk; `total` is their sum, clamped to 0..100 and rounded.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RiskParts {
    pub blast_radius: f64,
    pub cost: f64,
    pub dependents: u32,
    pub entry_point: f64,
    pub reachability: f64,
    pub spot: f64,
    pub stateful: f64,
    pub total: f64,
}

impl From<&reach::RiskParts> for RiskParts {
    fn from(p: &reach::RiskParts) -> Self {
        RiskParts {
            blast_radius: f64::from(p.blast),
            cost: f64::from(p.cost),
            dependents: p.dependents,
            entry_point: f64::from(p.entry),
            reachability: f64::from(p.reachability),
            spot: f64::from(p.spot),
            stateful: f64::from(p.stateful),
            total: f64::from(p.total),
        }
    }
}

/// One edge of a proof, in the direction reachability travelled (`from` reached first).
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProofStep {
    pub from: Crn,
    pub inferred: bool,
    pub relation: Relation,
    pub source_crn: Crn,
    pub target_crn: Crn,
    pub to: Crn,
}

/// Estimated from the machine family and size (embedded table), not a live
/// feed; null for a machine that is not spot or preemptible, and for other
/// resources.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SpotEstimate {
    pub basis: String,
    #[schema(maximum = 4)]
    pub interruption_band: u8,
    pub interruption_frequency: InterruptionFrequency,
    #[schema(maximum = 100)]
    pub interruption_score: u8,
    #[schema(required = true)]
    pub machine_type: Option<String>,
}

impl From<reach::Spot> for SpotEstimate {
    fn from(s: reach::Spot) -> Self {
        SpotEstimate {
            basis: s.basis,
            interruption_band: s.band,
            interruption_frequency: InterruptionFrequency::from(s.frequency),
            interruption_score: s.score,
            machine_type: s.machine_type,
        }
    }
}

/// `GET /api/v1/oracle/{crn}`: one resource's reachability with the proof
/// path, the parts of its removal risk, and the spot-interruption estimate
/// of a spot machine.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OracleResult {
    pub crn: Crn,
    pub enabled: bool,
    /// The entry point the proof starts from.
    #[schema(required = true)]
    pub entry_crn: Option<Crn>,
    pub entry_point: bool,
    pub is_waste: bool,
    pub proof: Vec<ProofStep>,
    pub reachability: Reachability,
    pub risk: RiskParts,
    #[schema(minimum = 0, maximum = 100)]
    pub risk_score: f64,
    pub scan_seq: u64,
    /// Null for a machine that is not spot or preemptible, and for other resources.
    #[schema(required = true)]
    pub spot: Option<SpotEstimate>,
    #[serde(rename = "type")]
    pub ty: String,
    #[schema(required = true)]
    pub verdict: Option<String>,
    /// `false` for a logically deleted resource.
    pub visible: bool,
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_spot_band_is_listed() {
        assert_eq!(super::InterruptionFrequency::VALUES, reach::SPOT_BANDS);
    }

    use svc_engine::analysis::reach;
}

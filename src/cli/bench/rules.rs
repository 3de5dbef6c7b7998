//! The 100 CEL rules of the policy pass: the shapes operators write (kind
//! and cost, missing tags, state and age, properties, edge counts,
//! regions), the same kind of rules as `benches/policy.rs` evaluates
//! in-process, here installed through the API.

/// One rule evaluated alone as a dry run.
pub const DRY_RUN: &str = "kind == \"volume\" && out[\"AttachedTo\"] == 0 && cost > 5.0";

const KINDS: [&str; 12] = [
    "volume",
    "instance",
    "snapshot",
    "bucket",
    "db",
    "function",
    "disk",
    "vm",
    "pod",
    "node",
    "eip",
    "loadbalancer",
];

const PROVIDERS: [&str; 4] = ["aws", "gcp", "azure", "kubernetes"];

/// Rules that read properties, edges and names, one of each shape.
const OTHERS: [&str; 40] = [
    "kind == \"volume\" && has(props.volume_type) && props.volume_type == \"gp2\"",
    "kind == \"volume\" && has(props.size_gib) && props.size_gib > 1000",
    "kind == \"volume\" && has(props.encrypted) && !props.encrypted",
    "kind == \"volume\" && has(props.iops) && props.iops > 16000 && cost < 40.0",
    "kind == \"snapshot\" && age_days > 180",
    "kind == \"snapshot\" && crn.contains(\":snapshot:\") && age_days > 700",
    "kind == \"instance\" && has(props.instance_type) && props.instance_type.startsWith(\"m4.\")",
    "kind == \"instance\" && incoming.AttachedTo == 0 && state == \"running\"",
    "kind == \"instance\" && has(props.spot) && props.spot == true && tags.env == \"prod\"",
    "kind == \"node\" && incoming.Runs == 0",
    "kind == \"pod\" && out.Runs == 0",
    "kind == \"bucket\" && has(tags.team) && tags.team.endsWith(\"-old\")",
    "type == \"ec2:eip\" && out.AttachedTo == 0",
    "type in [\"rds:db\", \"sql:instance\"] && cost > 400.0",
    "kind == \"function\" && has(props.runtime) && props.runtime in [\"python3.6\", \"nodejs12.x\"]",
    "kind == \"function\" && incoming.Uses == 0 && incoming.FlowsTo == 0",
    "kind == \"db\" && has(props.multi_az) && props.multi_az == false && tags.env == \"prod\"",
    "kind == \"loadbalancer\" && out.FlowsTo == 0",
    "kind == \"address\" && incoming.FlowsTo == 0 && out.AttachedTo == 0",
    "kind == \"address\" && state != \"in-use\"",
    "kind == \"disk\" && out[\"AttachedTo\"] == 0 && cost > 10.0",
    "kind == \"vm\" && state == \"deallocated\" && age_days > 60",
    "kind == \"cluster\" && incoming[\"Runs\"] > 50",
    "kind == \"cluster\" && !has(tags.owner)",
    "kind == \"table\" && has(props.billing_mode) && props.billing_mode == \"PROVISIONED\"",
    "kind == \"table\" && cost > 150.0",
    "cost > 1500.0 && reachability == \"unreachable\"",
    "cost > 2500.0 && !has(tags.owner)",
    "is_waste && cost > 200.0",
    "age_days > 900 && state != \"running\"",
    "tags.env == \"dev\" && cost > 600.0",
    "has(tags.owner) && tags.owner == \"\"",
    "account == \"999999999999\"",
    "region == \"ap-northeast-1\" && kind == \"instance\"",
    "state == \"error\" || state == \"failed\"",
    "reachability == \"unknown\" && cost > 80.0 && kind != \"pod\"",
    "risk_score > 95.0 && is_waste",
    "crn.endsWith(\"-scratch\") && age_days > 2",
    "provider == \"aws\" && tags.env == \"prod\" && !has(tags.team)",
    "provider == \"gcp\" && tags.env == \"staging\" && cost > 300.0",
];

/// The 100 rules, in a fixed order.
pub fn rules() -> Vec<String> {
    let mut r = Vec::with_capacity(100);
    for (i, k) in KINDS.iter().enumerate() {
        r.push(format!("kind == \"{k}\" && cost > {}.0", 40 + i * 30));
        r.push(format!("kind == \"{k}\" && !has(tags.owner)"));
        r.push(format!(
            "kind == \"{k}\" && state == \"stopped\" && age_days > {}",
            10 + i
        ));
        r.push(format!(
            "kind == \"{k}\" && tags.env == \"prod\" && reachability == \"unreachable\""
        ));
    }
    for p in PROVIDERS {
        r.push(format!("provider == \"{p}\" && !has(tags.cost_center) && cost > 20.0"));
        r.push(format!("provider == \"{p}\" && is_waste && risk_score < 30.0"));
        r.push(format!(
            "provider == \"{p}\" && region in [\"us-east-1\", \"eu-west-1\", \"europe-west1\", \"westeurope\"] && cost >= 400.0"
        ));
    }
    r.extend(OTHERS.iter().map(|s| (*s).to_owned()));
    r
}

#[cfg(test)]
mod tests {
    #[test]
    fn there_are_a_hundred_distinct_rules() {
        let r = super::rules();
        assert_eq!(r.len(), 100);
        let distinct: std::collections::BTreeSet<&String> = r.iter().collect();
        assert_eq!(distinct.len(), 100);
    }
}

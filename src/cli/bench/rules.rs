//! The 100 CEL rules of the policy pass: the shapes operators write (kind
//! and cost, missing tags, state and age, properties, edge counts,
//! regions). `benches/policy.rs` evaluates the same rules in-process (it
//! includes this file), `svc bench` installs them through the API.

/// One rule evaluated alone as a dry run.
pub const DRY_RUN: &str = "kind == \"volume\" && out[\"AttachedTo\"] == 0 && cost > 5.0";

/// The 100 rules, in a fixed order; all take the policy engine's fast path.
pub fn rules() -> Vec<String> {
    let kinds = [
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
    let mut r = Vec::new();
    for (i, k) in kinds.iter().enumerate() {
        r.push(format!("kind == \"{k}\" && cost > {}.0", 50 + i * 25));
        r.push(format!("kind == \"{k}\" && !has(tags.owner)"));
        r.push(format!(
            "kind == \"{k}\" && state == \"stopped\" && age_days > {}",
            7 + i
        ));
        r.push(format!(
            "kind == \"{k}\" && tags.env == \"prod\" && reachability == \"unreachable\""
        ));
    }
    for p in ["aws", "gcp", "azure", "kubernetes"] {
        r.push(format!("provider == \"{p}\" && !has(tags.cost_center) && cost > 10.0"));
        r.push(format!("provider == \"{p}\" && is_waste && risk_score < 40.0"));
        r.push(format!("provider == \"{p}\" && region in [\"us-east-1\", \"eu-west-1\", \"europe-west1\", \"westeurope\"] && cost >= 500.0"));
    }
    r.extend(
        [
            "kind == \"volume\" && has(props.volume_type) && props.volume_type == \"gp2\"",
            "kind == \"volume\" && has(props.attachment_state) && props.attachment_state == \"detached\" && out[\"AttachedTo\"] == 0",
            "kind == \"volume\" && has(props.size_gib) && props.size_gib > 500",
            "kind == \"volume\" && has(props.encrypted) && !props.encrypted",
            "kind == \"snapshot\" && age_days > 90",
            "kind == \"snapshot\" && crn.contains(\":snapshot:\") && age_days > 365",
            "kind == \"instance\" && has(props.instance_type) && props.instance_type.startsWith(\"t2.\")",
            "kind == \"instance\" && incoming.AttachedTo == 0 && state == \"running\"",
            "kind == \"node\" && incoming.Runs == 0",
            "kind == \"pod\" && out.Runs == 0",
            "kind == \"bucket\" && has(tags.team) && tags.team.endsWith(\"-legacy\")",
            "type == \"ec2:eip\" && out.AttachedTo == 0",
            "type in [\"rds:db\", \"sql:instance\"] && cost > 300.0",
            "kind == \"function\" && has(props.runtime) && props.runtime in [\"python2.7\", \"nodejs10.x\"]",
            "cost > 1000.0 && reachability == \"unreachable\"",
            "cost > 2000.0 && !has(tags.owner)",
            "is_waste && cost > 100.0",
            "age_days > 1000 && state != \"running\"",
            "tags.env == \"dev\" && cost > 800.0",
            "has(tags.owner) && tags.owner == \"\"",
            "account == \"000000000000\"",
            "region == \"ap-southeast-2\" && kind == \"instance\"",
            "state == \"error\" || state == \"failed\"",
            "reachability == \"unknown\" && cost > 50.0 && kind != \"pod\"",
            "risk_score > 90.0 && is_waste",
            "crn.endsWith(\"-tmp\") && age_days > 1",
            "kind == \"disk\" && out[\"AttachedTo\"] == 0 && cost > 5.0",
            "kind == \"vm\" && state == \"deallocated\" && age_days > 30",
            "kind == \"cluster\" && incoming[\"Runs\"] > 100",
            "kind == \"table\" && has(props.billing_mode) && props.billing_mode == \"PROVISIONED\"",
            "provider == \"aws\" && tags.env == \"prod\" && !has(tags.team)",
            "kind == \"db\" && has(props.multi_az) && props.multi_az == false && tags.env == \"prod\"",
            "kind == \"loadbalancer\" && out.FlowsTo == 0",
            "kind == \"address\" && incoming.FlowsTo == 0 && out.AttachedTo == 0",
            "kind == \"function\" && incoming.Uses == 0 && incoming.FlowsTo == 0",
            "kind == \"table\" && cost > 100.0",
            "kind == \"cluster\" && !has(tags.owner)",
            "kind == \"address\" && state != \"in-use\"",
            "kind == \"instance\" && has(props.spot) && props.spot == true && tags.env == \"prod\"",
            "kind == \"volume\" && has(props.iops) && props.iops > 10000 && cost < 50.0",
        ]
        .map(str::to_owned),
    );
    assert_eq!(r.len(), 100);
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

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::*;
use crate::state;

/// A graph in memory: CRN to (live, cost, props, tags).
#[derive(Default)]
struct Graph(BTreeMap<String, (bool, f64, Value, BTreeMap<String, String>)>);

impl Graph {
    fn add(&mut self, crn: &str, live: bool, cost: f64, props: Value, tags: &[(&str, &str)]) {
        let tags = tags.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        self.0.insert(crn.to_owned(), (live, cost, props, tags));
    }
}

impl Live for Graph {
    fn contains(&self, crn: &str) -> bool {
        self.0.contains_key(crn)
    }

    fn live(&self, crn: &str) -> Option<LiveNode> {
        let (live, cost, props, tags) = self.0.get(crn)?;
        live.then(|| LiveNode {
            props: props.as_object().cloned().unwrap_or_default(),
            tags: tags.clone(),
            cost_usd_mo: *cost,
        })
    }

    fn each(&self, f: &mut dyn FnMut(&Seen<'_>)) {
        for (crn, (live, cost, _, _)) in &self.0 {
            let c = svc_graph::crn::CrnRef::parse(crn).unwrap();
            f(&Seen {
                provider: c.provider,
                region: c.region,
                service: c.service,
                kind: c.kind,
                account: c.account,
                id: c.id,
                live: *live,
                cost_usd_mo: *cost,
            });
        }
    }
}

const ACCT: &str = "111122223333";

fn vol(id: &str) -> String {
    format!("crn:svc:aws:eu-west-1:ec2:volume:{ACCT}:{id}")
}

fn volume_attrs(id: &str, size: u64) -> Value {
    json!({
        "id": id, "arn": format!("arn:aws:ec2:eu-west-1:{ACCT}:volume/{id}"),
        "availability_zone": "eu-west-1a", "size": size, "type": "gp3", "iops": 3000,
        "encrypted": false, "tags": {"team": "data"}, "tags_all": {"team": "data", "env": "prod"}
    })
}

fn state_of(resources: Value) -> state::State {
    let text = json!({"version": 4, "serial": 1, "lineage": "l", "resources": resources}).to_string();
    state::parse(text.as_bytes()).unwrap()
}

/// The estate: volumes 0..=3 declared by count in module.app; 0 in sync,
/// 1 resized and retagged by hand, 2 deleted, 3 never scanned; a NAT
/// gateway declared without an account; a hand-made volume; a volume of
/// an account no state covers.
fn estate() -> (state::State, Graph) {
    let instances: Vec<Value> = (0..4)
        .map(|i| json!({"index_key": i, "attributes": volume_attrs(&format!("vol-{i}"), 100)}))
        .collect();
    let s = state_of(json!([
        {"module": "module.app", "mode": "managed", "type": "aws_ebs_volume", "name": "data",
         "each": "list", "instances": instances},
        {"mode": "managed", "type": "aws_nat_gateway", "name": "egress",
         "instances": [{"attributes": {"id": "nat-9", "region": "eu-west-1"}}]},
        {"mode": "managed", "type": "null_resource", "name": "hook",
         "instances": [{"attributes": {"id": "1"}}]},
        {"mode": "data", "type": "aws_ami", "name": "base",
         "instances": [{"attributes": {"id": "ami-1"}}]}
    ]));
    let mut g = Graph::default();
    let props = |size: u64| json!({"size_gib": size, "volume_type": "gp3", "iops": 3000, "encrypted": false, "availability_zone": "eu-west-1a"});
    g.add(
        &vol("vol-0"),
        true,
        8.0,
        props(100),
        &[("team", "data"), ("env", "prod"), ("svc:ignore", "true")],
    );
    g.add(
        &vol("vol-1"),
        true,
        16.0,
        props(200),
        &[("team", "ml"), ("env", "prod")],
    );
    g.add(&vol("vol-2"), false, 8.0, props(100), &[]);
    g.add(&vol("vol-byhand"), true, 40.0, props(500), &[]);
    g.add(&vol("vol-cheap"), true, 1.0, props(10), &[]);
    g.add(
        "crn:svc:aws:eu-west-1:ec2:volume:999:vol-other",
        true,
        99.0,
        props(1),
        &[],
    );
    g.add(
        &format!("crn:svc:aws:eu-west-1:ec2:nat-gateway:{ACCT}:nat-9"),
        true,
        32.0,
        json!({}),
        &[],
    );
    g.add(
        &format!("crn:svc:aws:eu-west-1:ec2:instance:{ACCT}:i-1"),
        true,
        60.0,
        json!({}),
        &[],
    );
    (s, g)
}

#[test]
fn declared_resources_are_matched_by_crn_and_else_by_id() {
    let (s, g) = estate();
    let index = Index::build(&[&s], &g);
    assert_eq!(index.entries.len(), 5);
    assert_eq!(index.unmapped.len(), 1);
    assert_eq!(index.unmapped[0].address, "null_resource.hook");
    let e = index.get(&vol("vol-1")).unwrap();
    assert_eq!(e.declared.address, "module.app.aws_ebs_volume.data[1]");
    let nat = index
        .get(&format!("crn:svc:aws:eu-west-1:ec2:nat-gateway:{ACCT}:nat-9"))
        .unwrap();
    assert_eq!(nat.declared.address, "aws_nat_gateway.egress");
    assert!(nat.in_graph);
    assert!(index.get(&vol("vol-byhand")).is_none());
    let never = index
        .entries
        .iter()
        .find(|e| e.declared.address.ends_with("[3]"))
        .unwrap();
    assert_eq!(never.crn.as_deref(), Some(vol("vol-3").as_str()));
    assert!(!never.in_graph);
}

#[test]
fn the_report_names_gone_changed_and_unmanaged_resources() {
    let (s, g) = estate();
    let index = Index::build(&[&s], &g);
    let r = report(&index, &g, 100);
    assert_eq!(
        r.totals,
        Totals {
            declared: 6,
            mapped: 5,
            in_sync: 2,
            changed: 1,
            attributes: 2,
            gone: 2,
            outside_scans: 0,
            unmanaged: 3,
        }
    );
    let gone: Vec<&str> = r
        .gone
        .iter()
        .map(|g| index.entries[g.entry].declared.address.as_str())
        .collect();
    assert_eq!(
        gone,
        ["module.app.aws_ebs_volume.data[2]", "module.app.aws_ebs_volume.data[3]"]
    );
    assert_eq!(r.changed.len(), 1);
    let c = &r.changed[0];
    assert_eq!(
        index.entries[c.entry].declared.address,
        "module.app.aws_ebs_volume.data[1]"
    );
    assert_eq!(
        c.attributes,
        vec![
            AttributeDrift {
                attribute: "size".into(),
                property: "size_gib".into(),
                declared: json!(100),
                live: json!(200),
            },
            AttributeDrift {
                attribute: "tags.team".into(),
                property: "tags.team".into(),
                declared: json!("data"),
                live: json!("ml"),
            },
        ]
    );
    // The most expensive first; another account's volume is not claimed.
    let unmanaged: Vec<(&str, f64)> = r.unmanaged.iter().map(|u| (u.crn.as_str(), u.cost_usd_mo)).collect();
    assert_eq!(
        unmanaged,
        [
            (format!("crn:svc:aws:eu-west-1:ec2:instance:{ACCT}:i-1").as_str(), 60.0),
            (vol("vol-byhand").as_str(), 40.0),
            (vol("vol-cheap").as_str(), 1.0),
        ]
    );
    assert_eq!(r.unmanaged[0].terraform_type, "aws_instance");
    assert_eq!(r.unmanaged[1].graph_type, "ec2:volume");
}

#[test]
fn lists_are_cut_and_totals_are_not() {
    let (s, g) = estate();
    let index = Index::build(&[&s], &g);
    let r = report(&index, &g, 1);
    assert_eq!((r.totals.gone, r.totals.unmanaged, r.totals.changed), (2, 3, 1));
    assert_eq!((r.gone.len(), r.unmanaged.len(), r.changed.len()), (1, 1, 1));
    assert_eq!(r.unmanaged[0].cost_usd_mo, 60.0, "the cut keeps the most expensive");
    let none = report(&index, &g, 0);
    assert!(none.gone.is_empty() && none.unmanaged.is_empty() && none.changed.is_empty());
    assert_eq!(none.totals, r.totals);
}

#[test]
fn resources_of_accounts_no_scan_reports_are_not_called_gone() {
    let s = state_of(json!([
        {"mode": "managed", "type": "aws_ebs_volume", "name": "far",
         "instances": [{"attributes": {"id": "vol-x", "arn": "arn:aws:ec2:us-east-1:555:volume/vol-x"}}]},
        {"mode": "managed", "type": "google_storage_bucket", "name": "b",
         "instances": [{"attributes": {"name": "b", "location": "US"}}]}
    ]));
    let (_, g) = estate();
    let index = Index::build(&[&s], &g);
    let r = report(&index, &g, 10);
    assert_eq!((r.totals.outside_scans, r.totals.gone), (2, 0));
    assert!(r.unmanaged.is_empty(), "no account of the graph is covered");
}

#[test]
fn values_compare_by_what_they_say() {
    assert!(same(&json!(100), &json!(100.0)));
    assert!(same(&json!("3000"), &json!(3000)));
    assert!(same(&json!(true), &json!("true")));
    assert!(
        same(&json!(0), &Value::Null),
        "retention 0 is never-expire, reported as null"
    );
    assert!(same(&json!(""), &Value::Null));
    assert!(!same(&json!(7), &Value::Null));
    assert!(!same(&json!("gp2"), &json!("gp3")));
    assert!(!same(&json!(false), &json!("true")));
    assert!(!same(&json!([1]), &json!([2])));
}

#[test]
fn one_resource_reads_as_the_report_of_an_estate_of_it() {
    let (s, g) = estate();
    let index = Index::build(&[&s], &g);
    let changed = report_one(&index, &g, &vol("vol-1"));
    assert_eq!((changed.totals.changed, changed.totals.attributes), (1, 2));
    assert_eq!(
        changed.changed[0].entry,
        index
            .entries
            .iter()
            .position(|e| e.declared.address.ends_with("[1]"))
            .unwrap()
    );
    let in_sync = report_one(&index, &g, &vol("vol-0"));
    assert_eq!((in_sync.totals.in_sync, in_sync.changed.len()), (1, 0));
    assert_eq!(report_one(&index, &g, &vol("vol-2")).totals.gone, 1);
    let by_hand = report_one(&index, &g, &vol("vol-byhand"));
    assert_eq!(by_hand.unmanaged[0].cost_usd_mo, 40.0);
    let other = report_one(&index, &g, "crn:svc:aws:eu-west-1:ec2:volume:999:vol-other");
    assert_eq!(other.totals, Totals::default(), "an account no state covers");
}

#[test]
fn a_cut_among_equal_costs_keeps_the_first_crns() {
    let s = state_of(json!([
        {"mode": "managed", "type": "aws_ebs_volume", "name": "x",
         "instances": [{"attributes": volume_attrs("vol-0", 100)}]}
    ]));
    let mut g = Graph::default();
    g.add(&vol("vol-0"), true, 1.0, json!({}), &[]);
    for id in ["vol-d", "vol-b", "vol-a", "vol-c"] {
        g.add(&vol(id), true, 5.0, json!({}), &[]);
    }
    g.add(&vol("vol-z"), true, 9.0, json!({}), &[]);
    let index = Index::build(&[&s], &g);
    let r = report(&index, &g, 3);
    let kept: Vec<&str> = r.unmanaged.iter().map(|u| u.crn.as_str()).collect();
    assert_eq!(kept, [vol("vol-z"), vol("vol-a"), vol("vol-b")]);
    assert_eq!(r.totals.unmanaged, 5);
}

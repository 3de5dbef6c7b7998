//! Infrastructure as code against a real daemon on the mock estate:
//! Terraform states on disk and in S3 (a real `moto_server`), written for
//! the estate's resources with modules, `count` and `for_each` addresses; a
//! real git repository with commits by two authors; the drift report
//! before and after a remediation, the plan's address and code change,
//! provenance, and topology's `provenance`.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::collections::BTreeSet;

use common::moto::Moto;
use common::terraform::{AWS_MAPPED, AWS_PROVIDER, attributes, git, state};
use common::{Api, Daemon};
use serde_json::{Value, json};

const SCALE: usize = 300;

const ALICE: (&str, &str) = ("Alice Example", "alice@example.com");
const BOB: (&str, &str) = ("Bob Builder", "bob@example.com");

/// The 1-based line of the first line of `text` that starts with `prefix`.
fn line_of(text: &str, prefix: &str) -> u64 {
    text.lines()
        .position(|l| l.starts_with(prefix))
        .map(|i| i as u64 + 1)
        .unwrap_or_else(|| panic!("no line starting {prefix:?}"))
}

fn text<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or_else(|| panic!("{k} in {v}"))
}

/// The Terraform type of a mock node svc would remove, by graph type.
fn terraform_type(graph_type: &str) -> Option<&'static str> {
    Some(match graph_type {
        "ec2:eip" => "aws_eip",
        "ec2:snapshot" => "aws_ebs_snapshot",
        "ec2:image" => "aws_ami",
        _ => return None,
    })
}

async fn drift(api: &Api) -> Value {
    api.get_ok("/api/v1/drift/report").await
}

#[tokio::test]
async fn terraform_states_and_their_code_are_matched_to_the_estate() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let moto = Moto::start_on(port).await;
    moto.create_bucket("tf-state").await;
    let dir = common::data_dir();
    std::fs::write(
        dir.path().join("config.toml"),
        format!(
            "{}[iac]\nterraform_states = [\"states/app.tfstate\", \"s3://tf-state/prod/network.tfstate\"]\nrepository = \"infra\"\n",
            common::QUIET_CONFIG
        ),
    )
    .unwrap();
    let mut d = Daemon::configure(dir.path(), SCALE);
    d.env = [
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ENDPOINT_URL", moto.endpoint.as_str()),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    d.launch().await;
    d.wait_scan_after(0).await;
    let api = d.api();

    // Configured, nothing there yet: each state is named with why.
    let r = drift(&api).await;
    assert_eq!(r["configured"], true, "{r}");
    let errors: Vec<&str> = r["states"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| text(s, "error"))
        .collect();
    assert!(errors[0].contains("states/app.tfstate"), "{r}");
    assert!(errors[1].contains("s3://tf-state/prod/network.tfstate"), "{r}");
    assert_eq!(r["repository"]["path"], "infra");
    assert!(r["repository"]["error"].is_string(), "no repository yet: {r}");
    assert_eq!(r["totals"]["declared"], 0);

    // What the states will declare, chosen from the estate.
    let nodes = api.all_nodes(Some("aws")).await;
    let live: Vec<&Value> = nodes.iter().filter(|n| n["valid_to"] == 0).collect();
    let queue = api
        .get_query_ok("/api/v1/remediation/queue", &[("stage", "pending"), ("limit", "1000")])
        .await;
    let pending = queue["stages"]["pending"].as_array().unwrap();
    let node_of = |crn: &str| *live.iter().find(|n| n["crn"] == crn).unwrap_or_else(|| panic!("{crn}"));
    let doomed = node_of(text(
        pending
            .iter()
            .find(|i| i["type"] == "ec2:volume" && i["action"] == "delete")
            .expect("a pending volume"),
        "crn",
    ));
    let account = text(doomed, "account");
    let region = text(doomed, "region");
    let same_place = |ty: &str| -> Vec<&Value> {
        live.iter()
            .copied()
            .filter(|n| n["type"] == ty && n["account"] == account && n["region"] == region)
            .collect()
    };
    let volumes: Vec<&Value> = same_place("ec2:volume")
        .into_iter()
        .filter(|n| n["crn"] != doomed["crn"])
        .collect();
    let instances = same_place("ec2:instance");
    assert!(
        volumes.len() >= 2 && instances.len() >= 2,
        "the estate has changed shape"
    );
    let single_item = pending
        .iter()
        .find(|i| terraform_type(text(i, "type")).is_some() && i["action"] != "stop")
        .expect("a pending resource of a type declared alone");
    let single = node_of(text(single_item, "crn"));
    let single_tf = terraform_type(text(single, "type")).unwrap();
    let bucket = *live.iter().find(|n| n["type"] == "s3:bucket").expect("a bucket");

    let resized = volumes[1];
    let live_size = resized["properties"]["size_gib"].as_i64().unwrap();
    let single_attributes = attributes(single_tf, single);
    let mut resized_attributes = attributes("aws_ebs_volume", resized);
    resized_attributes["size"] = json!(live_size + 10);
    let scratch_id = "vol-0000000000000dead";
    let app = state(
        41,
        json!([
            {"module": "module.app", "mode": "managed", "type": "aws_ebs_volume", "name": "data", "each": "list",
             "provider": AWS_PROVIDER, "instances": [
                {"index_key": 0, "schema_version": 0, "attributes": attributes("aws_ebs_volume", volumes[0])},
                {"index_key": 1, "schema_version": 0, "attributes": attributes("aws_ebs_volume", doomed)},
                {"index_key": 2, "schema_version": 0, "attributes": resized_attributes}
             ]},
            {"module": "module.app", "mode": "managed", "type": "aws_instance", "name": "web", "each": "map",
             "provider": AWS_PROVIDER, "instances": [
                {"index_key": "a", "schema_version": 1, "attributes": attributes("aws_instance", instances[0])},
                {"index_key": "b", "schema_version": 1, "attributes": attributes("aws_instance", instances[1])}
             ]},
            {"mode": "managed", "type": "aws_ebs_volume", "name": "scratch", "provider": AWS_PROVIDER, "instances": [
                {"schema_version": 0, "attributes": {"id": scratch_id, "size": 8, "type": "gp3",
                  "arn": format!("arn:aws:ec2:{region}:{account}:volume/{scratch_id}")}}
            ]},
            {"mode": "managed", "type": single_tf, "name": "egress", "provider": AWS_PROVIDER, "instances": [
                {"schema_version": 0, "attributes": single_attributes}
            ]},
            {"mode": "data", "type": "aws_caller_identity", "name": "me", "provider": AWS_PROVIDER, "instances": [
                {"schema_version": 0, "attributes": {"id": account, "account_id": account}}
            ]}
        ]),
    );
    std::fs::create_dir_all(dir.path().join("states")).unwrap();
    std::fs::write(dir.path().join("states/app.tfstate"), &app).unwrap();
    let network = state(
        7,
        json!([
            {"mode": "managed", "type": "aws_s3_bucket", "name": "logs", "provider": AWS_PROVIDER, "instances": [
                {"schema_version": 0, "attributes": {"id": bucket["physical_id"], "bucket": bucket["physical_id"],
                  "arn": format!("arn:aws:s3:::{}", text(bucket, "physical_id")), "region": bucket["region"],
                  "tags_all": bucket["tags"]}}
            ]},
            {"mode": "managed", "type": "null_resource", "name": "rotate", "provider": "provider[\"registry.terraform.io/hashicorp/null\"]",
             "instances": [{"schema_version": 0, "attributes": {"id": "4213"}}]}
        ]),
    );
    moto.put_object("tf-state", "prod/network.tfstate", network).await;

    // The code: Alice writes the module and the root, Bob adds one resource.
    let repo = dir.path().join("infra");
    std::fs::create_dir_all(repo.join("modules/app")).unwrap();
    let module_tf = "variable \"sizes\" {\n  type = list(number)\n}\n\n\
        # Data disks; see the \"}\" in this comment.\n\
        resource \"aws_ebs_volume\" \"data\" {\n  count             = 3\n  availability_zone = \"eu-west-1a\"\n  size              = var.sizes[count.index]\n  tags = {\n    note = \"braces } in strings\"\n  }\n}\n\n\
        resource \"aws_instance\" \"web\" {\n  for_each      = toset([\"a\", \"b\"])\n  ami           = \"ami-123\"\n  instance_type = \"t3.small\"\n}\n";
    std::fs::write(repo.join("modules/app/main.tf"), module_tf).unwrap();
    let root_alice = "terraform {\n  required_version = \">= 1.7\"\n}\n\n\
        module \"app\" {\n  source = \"./modules/app\"\n  sizes  = [100, 200, 300]\n}\n\n\
        resource \"aws_ebs_volume\" \"scratch\" {\n  availability_zone = \"eu-west-1a\"\n  size              = 8\n}\n\n\
        resource \"aws_s3_bucket\" \"logs\" {\n  bucket = \"logs\"\n}\n";
    std::fs::write(repo.join("main.tf"), root_alice).unwrap();
    git(&repo, ALICE, "2026-03-01T10:00:00Z", &["init", "-q"]);
    git(&repo, ALICE, "2026-03-01T10:00:00Z", &["add", "."]);
    git(
        &repo,
        ALICE,
        "2026-03-01T10:00:00Z",
        &["commit", "-q", "-m", "Data disks and the log bucket"],
    );
    let alice_commit = git(&repo, ALICE, "2026-03-01T10:00:00Z", &["rev-parse", "HEAD"]);
    let root =
        format!("{root_alice}\nresource \"{single_tf}\" \"egress\" {{\n  tags = {{\n    team = \"net\"\n  }}\n}}\n");
    std::fs::write(repo.join("main.tf"), &root).unwrap();
    git(&repo, BOB, "2026-04-02T09:30:00Z", &["commit", "-q", "-am", "Egress"]);
    let bob_commit = git(&repo, BOB, "2026-04-02T09:30:00Z", &["rev-parse", "HEAD"]);

    // The report: exactly what was declared against what is live.
    let r = drift(&api).await;
    for s in r["states"].as_array().unwrap() {
        assert!(s["error"].is_null(), "{r}");
    }
    assert_eq!(r["states"][0]["serial"], 41);
    assert_eq!(r["states"][0]["terraform_version"], "1.9.5");
    assert_eq!(r["states"][0]["resources"], 7, "{r}");
    assert_eq!(
        r["states"][1]["resources"], 1,
        "the bucket; null_resource is not mapped: {r}"
    );
    assert_eq!(r["repository"]["head"], json!(bob_commit));
    let declared_crns: BTreeSet<&str> = [doomed, volumes[0], resized, instances[0], instances[1], single, bucket]
        .iter()
        .map(|n| text(n, "crn"))
        .collect();
    let covered: BTreeSet<&str> = [account, text(single, "account"), text(bucket, "account")].into();
    let unmanaged = live
        .iter()
        .filter(|n| AWS_MAPPED.contains(&text(n, "type")) && covered.contains(text(n, "account")))
        .filter(|n| !declared_crns.contains(text(n, "crn")))
        .count();
    assert_eq!(
        r["totals"],
        json!({"declared": 9, "mapped": 8, "unmapped": 1, "in_sync": 6, "changed": 1, "attributes": 1,
               "gone": 1, "outside_scans": 0, "unmanaged": unmanaged}),
        "{r}"
    );
    assert_eq!(r["unmanaged"].as_array().unwrap().len(), unmanaged.min(500));
    let costs: Vec<f64> = r["unmanaged"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["cost_usd_mo"].as_f64().unwrap())
        .collect();
    assert!(
        costs.windows(2).all(|w| w[0] >= w[1]),
        "most expensive first: {costs:?}"
    );
    assert!(
        r["unmanaged"]
            .as_array()
            .unwrap()
            .iter()
            .all(|u| !declared_crns.contains(text(u, "crn")))
    );

    let changed = &r["changed"][0];
    assert_eq!(changed["address"], "module.app.aws_ebs_volume.data[2]");
    assert_eq!(changed["crn"], resized["crn"]);
    assert_eq!(changed["state"], "states/app.tfstate");
    assert_eq!(
        changed["attributes"],
        json!([{"attribute": "size", "property": "size_gib", "declared": live_size + 10, "live": live_size}])
    );

    let gone = &r["gone"][0];
    assert_eq!(gone["address"], "aws_ebs_volume.scratch");
    assert_eq!(
        gone["crn"],
        format!("crn:svc:aws:{region}:ec2:volume:{account}:{scratch_id}")
    );
    assert_eq!(gone["removed_by_svc"], false);
    assert_eq!(gone["code_change"]["kind"], "remove_block");
    let scratch_line = line_of(root_alice, "resource \"aws_ebs_volume\" \"scratch\"");
    assert_eq!(
        gone["code_change"]["diff"],
        format!(
            "--- a/main.tf\n+++ b/main.tf\n@@ -{scratch_line},4 +{},0 @@\n-resource \"aws_ebs_volume\" \"scratch\" {{\n-  availability_zone = \"eu-west-1a\"\n-  size              = 8\n-}}\n",
            scratch_line - 1
        )
    );

    // Provenance: the line's author, commit, file and line.
    let data_line = line_of(module_tf, "resource \"aws_ebs_volume\" \"data\"");
    let p = api
        .get_query_ok("/api/v1/provenance", &[("crn", text(doomed, "crn"))])
        .await;
    assert_eq!(
        (
            &p["managed"],
            &p["address"],
            &p["file"],
            &p["line"],
            &p["author"],
            &p["email"],
            &p["commit"]
        ),
        (
            &json!(true),
            &json!("module.app.aws_ebs_volume.data[1]"),
            &json!("modules/app/main.tf"),
            &json!(data_line),
            &json!(ALICE.0),
            &json!(ALICE.1),
            &json!(alice_commit)
        ),
        "{p}"
    );
    assert_eq!(p["summary"], "Data disks and the log bucket");
    assert_eq!(p["state"], "states/app.tfstate");
    let single_line = line_of(&root, &format!("resource \"{single_tf}\" \"egress\""));
    let p = api
        .get_query_ok("/api/v1/provenance", &[("crn", text(single, "crn"))])
        .await;
    assert_eq!(
        (&p["author"], &p["commit"], &p["file"], &p["line"]),
        (
            &json!(BOB.0),
            &json!(bob_commit),
            &json!("main.tf"),
            &json!(single_line)
        ),
        "{p}"
    );
    // Found by its name though its attributes give no account.
    let p = api
        .get_query_ok("/api/v1/provenance", &[("crn", text(bucket, "crn"))])
        .await;
    assert_eq!(
        (&p["address"], &p["author"]),
        (&json!("aws_s3_bucket.logs"), &json!(ALICE.0)),
        "{p}"
    );
    assert_eq!(p["state"], "s3://tf-state/prod/network.tfstate");
    let by_hand = text(&r["unmanaged"][0], "crn");
    let p = api.get_query_ok("/api/v1/provenance", &[("crn", by_hand)]).await;
    assert_eq!(
        (&p["managed"], &p["commit"], &p["line"], &p["address"]),
        (&json!(false), &json!(""), &json!(0), &json!(""))
    );
    let missing = format!("crn:svc:aws:{region}:ec2:volume:{account}:vol-0nothing");
    api.get_query("/api/v1/provenance", &[("crn", &missing)])
        .await
        .expect(404);
    api.get_query("/api/v1/provenance", &[("crn", "not-a-crn")])
        .await
        .expect(422);
    api.get_query("/api/v1/provenance", &[]).await.expect(400);

    // Asked in plain words, without a model: the same facts.
    let r = api
        .post_json(
            "/api/v1/cortex/assimilate",
            &json!({"question": format!("whose code is {}?", text(doomed, "crn"))}),
        )
        .await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
    let said = common::answer_text(&common::json_lines(&r.text));
    for part in [
        "`module.app.aws_ebs_volume.data[1]`".to_owned(),
        format!("modules/app/main.tf:{data_line}"),
        format!("{} <{}>", ALICE.0, ALICE.1),
        alice_commit[..12].to_owned(),
        "Its live attributes match the state.".to_owned(),
    ] {
        assert!(said.contains(&part), "{part:?} not in {said:?}");
    }

    // The same from the command line.
    let base = d.base();
    let env = [("SVC_URL", base.as_str()), ("SVC_TOKEN", d.token.as_str())];
    let (code, out, err) = common::run_cli(&["drift", "--limit", "5"], &env).await;
    assert_eq!(code, Some(0), "{err}");
    for part in [
        "state states/app.tfstate: serial 41, Terraform 1.9.5, 7 resources".to_owned(),
        format!("declared 9 (8 of types svc maps), in sync 6, changed 1 (1 attributes), gone 1, unmanaged {unmanaged}"),
        "  aws_ebs_volume.scratch".to_owned(),
        format!("    size: declared {}, live {live_size}", live_size + 10),
    ] {
        assert!(out.contains(&part), "{part:?} not in\n{out}");
    }
    let (code, out, err) = common::run_cli(&["provenance", text(single, "crn")], &env).await;
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains(&format!("  declared    main.tf:{single_line}-{}", single_line + 4)),
        "{out}"
    );
    assert!(out.contains(&format!("  written by  {} <{}>", BOB.0, BOB.1)), "{out}");
    assert!(
        out.contains(&format!("  commit      {bob_commit} Egress (2026-04-02T09:30:00Z)")),
        "{out}"
    );
    let (code, out, err) = common::run_cli(&["remediation", "plan", text(single, "crn")], &env).await;
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains(&format!(
            "In code ({single_tf}.egress in states/app.tfstate): Delete the"
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!("-resource \"{single_tf}\" \"egress\" {{")),
        "{out}"
    );

    // One resource's drift, as the assistant's tool reads it.
    let one = api
        .get_query_ok("/api/v1/drift/report", &[("crn", text(resized, "crn"))])
        .await;
    assert_eq!(one["totals"]["changed"], 1);
    assert_eq!(one["provenance"]["address"], "module.app.aws_ebs_volume.data[2]");

    // The plan speaks Terraform's address and says what to change.
    let plan = api.get_query_ok("/api/v1/plan", &[("crn", text(doomed, "crn"))]).await;
    assert_eq!(plan["iac"]["address"], "module.app.aws_ebs_volume.data[1]");
    assert_eq!(plan["iac"]["code_change"]["kind"], "reduce_count");
    assert_eq!(
        (&plan["iac"]["file"], &plan["iac"]["line"]),
        (&json!("modules/app/main.tf"), &json!(data_line))
    );
    assert!(
        text(&plan, "terraform").starts_with(
            "  # module.app.aws_ebs_volume.data[1] will be destroyed\n  - resource \"aws_ebs_volume\" \"data\" {\n"
        ),
        "{plan}"
    );
    let plan = api.get_query_ok("/api/v1/plan", &[("crn", text(single, "crn"))]).await;
    let change = &plan["iac"]["code_change"];
    assert_eq!(change["kind"], "remove_block", "{plan}");
    assert_eq!(
        change["removed_block"],
        format!("removed {{\n  from = {single_tf}.egress\n\n  lifecycle {{\n    destroy = false\n  }}\n}}\n")
    );
    assert_eq!(
        change["diff"],
        format!(
            "--- a/main.tf\n+++ b/main.tf\n@@ -{single_line},5 +{},0 @@\n-resource \"{single_tf}\" \"egress\" {{\n-  tags = {{\n-    team = \"net\"\n-  }}\n-}}\n",
            single_line - 1
        )
    );
    let unmanaged_item = pending
        .iter()
        .find(|i| !declared_crns.contains(text(i, "crn")))
        .expect("an unmanaged pending item");
    let plan = api
        .get_query_ok("/api/v1/plan", &[("crn", text(unmanaged_item, "crn"))])
        .await;
    assert!(plan["iac"].is_null(), "{plan}");

    // Topology carries the same provenance, and empty for the rest.
    let topo = api.get_ok("/api/v1/topology").await;
    let of = |crn: &str| {
        topo["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["crn"] == crn)
            .unwrap()["provenance"]
            .clone()
    };
    assert_eq!(
        of(text(single, "crn")),
        json!({"commit": bob_commit, "author": BOB.0, "file": "main.tf", "line": single_line})
    );
    assert_eq!(
        of(text(doomed, "crn")),
        json!({"commit": alice_commit, "author": ALICE.0, "file": "modules/app/main.tf", "line": data_line})
    );
    assert_eq!(of(by_hand), json!({"commit": "", "author": "", "file": "", "line": 0}));

    // svc removes a managed resource: the next report names it gone, by svc.
    let hash = text(&plan_of(&api, text(single, "crn")).await, "plan_hash").to_owned();
    let outcome = api
        .post_json(
            "/api/v1/remediation/approve",
            &json!({"crn": single["crn"], "plan_hash": hash}),
        )
        .await
        .expect(200);
    assert_eq!(outcome["applied"], true, "{outcome}");
    api.scan_wait().await;
    let r = drift(&api).await;
    assert_eq!(r["totals"]["gone"], 2, "{r}");
    let removed = r["gone"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["crn"] == single["crn"])
        .expect("gone")
        .clone();
    assert_eq!(removed["address"], format!("{single_tf}.egress"));
    assert_eq!(removed["removed_by_svc"], true);
    assert_eq!(removed["code_change"]["kind"], "remove_block");

    // A state that stops reading is named; the other is still used.
    std::fs::write(
        dir.path().join("states/app.tfstate"),
        b"{\"version\": 4, \"resources\": [",
    )
    .unwrap();
    let r = drift(&api).await;
    assert!(text(&r["states"][0], "error").contains("states/app.tfstate"), "{r}");
    assert_eq!(r["totals"]["declared"], 2, "{r}");

    // The settings apply without a restart.
    api.put_json(
        "/api/v1/config",
        &json!({"iac": {"terraform_states": ["s3://tf-state/prod/network.tfstate"]}}),
    )
    .await
    .expect(200);
    let r = drift(&api).await;
    assert_eq!(r["states"].as_array().unwrap().len(), 1, "{r}");
    assert!(r["states"][0]["error"].is_null(), "{r}");
    api.put_json("/api/v1/config", &json!({"iac": {"terraform_states": 3}}))
        .await
        .expect(422);
}

async fn plan_of(api: &Api, crn: &str) -> Value {
    api.get_query_ok("/api/v1/plan", &[("crn", crn)]).await
}

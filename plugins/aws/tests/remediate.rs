//! Remediation, quarantine and reversibility against a real `moto_server`,
//! through the plugin binary over gRPC as the daemon calls them: each
//! action as a dry run (nothing changes) and for real (moto shows it),
//! retried (the same answer, nothing done twice), and undone.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::collections::HashMap;

use aws_sdk_ec2::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_ec2::types::{Filter, InstanceType, ResourceType, VolumeType};
use common::*;
use svc_proto::provider::v1::remediator_client::RemediatorClient;
use svc_proto::provider::v1::{
    QuarantineRequest, QuarantineResponse, RemediateRequest, RemediateResponse, ReversibilityProof,
    ReversibilityRequest,
};
use tonic::transport::Channel;

/// moto, the plugin, its `Remediator` client and an EC2 client of region A.
struct Bench {
    moto: Moto,
    plugin: Plugin,
    remediator: RemediatorClient<Channel>,
    ec2: aws_sdk_ec2::Client,
}

impl Bench {
    async fn start() -> Bench {
        let moto = Moto::start().await;
        let plugin = Plugin::against(&moto).await;
        let remediator = RemediatorClient::new(plugin.channel.clone());
        let ec2 = moto.ec2(A);
        Bench {
            moto,
            plugin,
            remediator,
            ec2,
        }
    }

    async fn remediate(&mut self, crn: &str, action: &str, props: &[(&str, &str)], dry_run: bool) -> RemediateResponse {
        let req = RemediateRequest {
            crn: crn.to_owned(),
            action: action.to_owned(),
            properties: props.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            dry_run,
        };
        let call = self.remediator.remediate(req);
        tokio::time::timeout(DEADLINE, call)
            .await
            .unwrap()
            .unwrap()
            .into_inner()
    }

    /// A real (not dry) action that must succeed.
    async fn ok(&mut self, crn: &str, action: &str, props: &[(&str, &str)]) -> RemediateResponse {
        let r = self.remediate(crn, action, props, false).await;
        assert!(r.success && r.error.is_empty(), "{action} of {crn}: {r:?}");
        r
    }

    /// A dry run that must succeed.
    async fn validated(&mut self, crn: &str, action: &str) {
        let r = self.remediate(crn, action, &[], true).await;
        assert!(r.success, "dry run of {action} on {crn}: {r:?}");
        assert_eq!(r.status, "validated");
        assert!(r.snapshot.is_empty());
    }

    async fn quarantine(&mut self, crn: &str, action: &str) -> QuarantineResponse {
        let req = QuarantineRequest {
            crn: crn.to_owned(),
            action: action.to_owned(),
            reason: "compromised credentials".to_owned(),
        };
        let call = self.plugin.provider.apply_quarantine(req);
        tokio::time::timeout(DEADLINE, call)
            .await
            .unwrap()
            .unwrap()
            .into_inner()
    }

    async fn reversibility(&mut self, crn: &str, intent: &str) -> ReversibilityProof {
        let req = ReversibilityRequest {
            crn: crn.to_owned(),
            properties: HashMap::from([("intent".to_owned(), intent.to_owned())]),
        };
        let call = self.plugin.provider.check_reversibility(req);
        tokio::time::timeout(DEADLINE, call)
            .await
            .unwrap()
            .unwrap()
            .into_inner()
    }

    async fn instance(&self, id: &str) -> aws_sdk_ec2::types::Instance {
        let out = self.ec2.describe_instances().instance_ids(id).send().await.unwrap();
        out.reservations()[0].instances()[0].clone()
    }

    async fn state(&self, id: &str) -> String {
        let i = self.instance(id).await;
        i.state().unwrap().name().unwrap().as_str().to_owned()
    }

    async fn groups(&self, id: &str) -> Vec<String> {
        let i = self.instance(id).await;
        let mut ids: Vec<String> = i
            .security_groups()
            .iter()
            .map(|g| g.group_id().unwrap().to_owned())
            .collect();
        ids.sort();
        ids
    }

    async fn volume_exists(&self, id: &str) -> bool {
        self.ec2.describe_volumes().volume_ids(id).send().await.is_ok()
    }

    async fn tagged_snapshots(&self, volume: &str) -> Vec<aws_sdk_ec2::types::Snapshot> {
        let f = Filter::builder()
            .name("tag:svc:remediation:volume")
            .values(volume)
            .build();
        let out = self.ec2.describe_snapshots().owner_ids("self").filters(f).send();
        out.await.unwrap().snapshots().to_vec()
    }
}

/// The daemon's form of a CRN (graph form), which the plugin takes too.
fn graph_crn(kind: &str, id: &str) -> String {
    let service = match kind {
        "load-balancer" => "elb",
        "log-group" => "logs",
        _ => "ec2",
    };
    format!("crn:svc:aws:{A}:{service}:{kind}:{ACCOUNT}:{id}")
}

fn tag_value(tags: &[aws_sdk_ec2::types::Tag], key: &str) -> Option<String> {
    tags.iter()
        .find(|t| t.key() == Some(key))
        .and_then(|t| t.value())
        .map(str::to_owned)
}

#[tokio::test]
async fn instances_stop_and_start_and_compensations_put_back_the_recorded_state() {
    let mut b = Bench::start().await;
    let mut s = Seeded::default();
    network(&b.ec2, &mut s, "10.1").await;
    let (id, _) = run(&b.ec2, &s, "ami-0123456789abcdef0", "web-1").await;
    let crn = graph_crn("instance", &id);

    b.validated(&crn, "stop").await;
    assert_eq!(b.state(&id).await, "running", "a dry run stops nothing");

    let stop = b.ok(&crn, "stop", &[("saga_id", "saga-1")]).await;
    assert_eq!(stop.status, "stopped");
    assert_eq!(stop.snapshot["previous_state"], "running");
    assert_eq!(stop.snapshot["instance_id"], id);
    assert_eq!(b.state(&id).await, "stopped");

    // A retry (after a crash) finds it stopped and says so.
    let again = b.ok(&crn, "stop", &[("saga_id", "saga-1")]).await;
    assert_eq!(again.status, "stopped");
    assert_eq!(again.snapshot["previous_state"], "stopped");

    // Undoing the retry (it found the instance stopped) leaves it stopped;
    // undoing the first stop starts it.
    let undo = b.ok(&crn, "start", &[("previous_state", "stopped")]).await;
    assert_eq!(undo.status, "stopped");
    assert_eq!(b.state(&id).await, "stopped");
    b.validated(&crn, "start").await;
    assert_eq!(b.state(&id).await, "stopped", "a dry run starts nothing");
    let start = b
        .ok(
            &crn,
            "start",
            &stop
                .snapshot
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect::<Vec<_>>(),
        )
        .await;
    assert_eq!(start.status, "running");
    assert_eq!(start.snapshot["previous_state"], "stopped");
    assert_eq!(b.state(&id).await, "running");

    // Each call left its `aws call` line, the dry runs as such.
    let log = b.plugin.log();
    let calls: Vec<(&str, bool)> = log
        .iter()
        .filter(|l| l["@message"] == "aws call")
        .filter_map(|l| Some((l["operation"].as_str()?, l["dry_run"].as_bool().unwrap_or(false))))
        .collect();
    assert!(calls.contains(&("StopInstances", true)), "{calls:?}");
    assert!(calls.contains(&("StopInstances", false)), "{calls:?}");
    assert!(calls.contains(&("StartInstances", false)), "{calls:?}");
}

#[tokio::test]
async fn volumes_are_snapshotted_deleted_and_restored_once() {
    let mut b = Bench::start().await;
    let mut s = Seeded::default();
    network(&b.ec2, &mut s, "10.1").await;
    let zone = format!("{A}a");
    let vol = volume(
        &b.ec2,
        &zone,
        20,
        VolumeType::Gp3,
        &[("team", "data"), ("Name", "scratch")],
    )
    .await;
    let crn = crn(A, "volume", &vol);

    b.validated(&crn, "delete").await;
    assert!(b.volume_exists(&vol).await, "a dry run deletes nothing");
    assert!(b.tagged_snapshots(&vol).await.is_empty(), "a dry run snapshots nothing");

    let props = [("saga_id", "saga-7"), ("rule", "aws-ebs-unattached")];
    let del = b.ok(&crn, "delete", &props).await;
    assert_eq!(del.status, "deleted");
    let snap = del.snapshot["snapshot_id"].clone();
    assert_eq!(del.snapshot["volume_id"], vol);
    assert_eq!(del.snapshot["availability_zone"], zone);
    assert_eq!(del.snapshot["volume_type"], "gp3");
    assert_eq!(del.snapshot["size_gib"], "20");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&del.snapshot["tags"]).unwrap(),
        serde_json::json!({"team": "data", "Name": "scratch"})
    );
    assert!(!b.volume_exists(&vol).await, "the volume is gone");
    let made = b.tagged_snapshots(&vol).await;
    assert_eq!(made.len(), 1);
    assert_eq!(made[0].snapshot_id(), Some(snap.as_str()));

    // Retried: the same snapshot is reported, none is made.
    let again = b.ok(&crn, "snapshot_delete", &props).await;
    assert_eq!(again.status, "deleted");
    assert_eq!(again.snapshot["snapshot_id"], snap);
    assert_eq!(b.tagged_snapshots(&vol).await.len(), 1);

    b.validated(&crn, "restore").await;
    let restored_filter = || {
        Filter::builder()
            .name("tag:svc:remediation:restored-from")
            .values(&snap)
            .build()
    };
    let listed = b
        .ec2
        .describe_volumes()
        .filters(restored_filter())
        .send()
        .await
        .unwrap();
    assert!(listed.volumes().is_empty(), "a dry run restores nothing");

    let pairs: Vec<(&str, &str)> = del.snapshot.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let restore = b.ok(&crn, "restore", &pairs).await;
    assert_eq!(restore.status, "restored");
    let new_id = restore.snapshot["volume_id"].clone();
    assert_ne!(new_id, vol);
    let listed = b.ec2.describe_volumes().volume_ids(&new_id).send().await.unwrap();
    let v = &listed.volumes()[0];
    assert_eq!(v.availability_zone(), Some(zone.as_str()));
    assert_eq!(v.volume_type(), Some(&VolumeType::Gp3));
    assert_eq!(v.size(), Some(20));
    assert_eq!(v.snapshot_id(), Some(snap.as_str()));
    assert_eq!(tag_value(v.tags(), "team").as_deref(), Some("data"));
    assert_eq!(tag_value(v.tags(), "Name").as_deref(), Some("scratch"));

    // Retried, and with the snapshot map lost: the same volume is found.
    assert_eq!(b.ok(&crn, "restore", &pairs).await.snapshot["volume_id"], new_id);
    assert_eq!(b.ok(&crn, "restore", &[]).await.snapshot["volume_id"], new_id);
    let listed = b
        .ec2
        .describe_volumes()
        .filters(restored_filter())
        .send()
        .await
        .unwrap();
    assert_eq!(listed.volumes().len(), 1, "one volume restored");
}

#[tokio::test]
async fn attached_volumes_are_deleted_only_from_stopped_instances_and_reattached() {
    let mut b = Bench::start().await;
    let mut s = Seeded::default();
    network(&b.ec2, &mut s, "10.1").await;
    let (instance, _) = run(&b.ec2, &s, "ami-0123456789abcdef0", "db-1").await;
    let zone = b
        .instance(&instance)
        .await
        .placement()
        .unwrap()
        .availability_zone()
        .unwrap()
        .to_owned();
    let vol = volume(&b.ec2, &zone, 10, VolumeType::Gp2, &[("role", "data")]).await;
    b.ec2
        .attach_volume()
        .volume_id(&vol)
        .instance_id(&instance)
        .device("/dev/sdf")
        .send()
        .await
        .unwrap();
    let crn = crn(A, "volume", &vol);

    // Attached to a running instance: refused, dry run included.
    for dry_run in [true, false] {
        let r = b.remediate(&crn, "snapshot_delete", &[], dry_run).await;
        assert!(!r.success && r.status == "failed", "{r:?}");
        assert!(
            r.error.contains(&instance) && r.error.contains("running"),
            "{}",
            r.error
        );
    }
    assert!(b.volume_exists(&vol).await);

    b.ec2.stop_instances().instance_ids(&instance).send().await.unwrap();
    b.validated(&crn, "snapshot_delete").await;
    let del = b.ok(&crn, "snapshot_delete", &[("saga_id", "s")]).await;
    assert_eq!(del.snapshot["attached_to"], instance);
    assert_eq!(del.snapshot["device"], "/dev/sdf");
    assert!(!b.volume_exists(&vol).await);

    let restore = b.ok(&crn, "restore", &[]).await;
    assert_eq!(restore.snapshot["attached_to"], instance);
    let new_id = &restore.snapshot["volume_id"];
    let listed = b.ec2.describe_volumes().volume_ids(new_id).send().await.unwrap();
    let attachment = &listed.volumes()[0].attachments()[0];
    assert_eq!(attachment.instance_id(), Some(instance.as_str()));
    assert_eq!(attachment.device(), Some("/dev/sdf"));
    // A retry finds it attached and does not attach it twice.
    assert_eq!(&b.ok(&crn, "restore", &[]).await.snapshot["volume_id"], new_id);
}

#[tokio::test]
async fn elastic_ips_snapshots_and_nat_gateways_are_removed_once() {
    let mut b = Bench::start().await;
    let mut s = Seeded::default();
    network(&b.ec2, &mut s, "10.1").await;

    // Elastic IP: released once; an associated one is refused; no way back.
    let eip = allocate(&b.ec2).await;
    let ip = b
        .ec2
        .describe_addresses()
        .allocation_ids(&eip)
        .send()
        .await
        .unwrap()
        .addresses()[0]
        .public_ip()
        .unwrap()
        .to_owned();
    let eip_crn = crn(A, "eip", &eip);
    b.validated(&eip_crn, "release").await;
    assert!(b.ec2.describe_addresses().allocation_ids(&eip).send().await.is_ok());
    let released = b.ok(&eip_crn, "release", &[]).await;
    assert_eq!(released.status, "deleted");
    assert_eq!(released.snapshot["public_ip"], ip);
    assert!(b.ec2.describe_addresses().allocation_ids(&eip).send().await.is_err());
    assert_eq!(b.ok(&eip_crn, "release", &[]).await.status, "deleted");
    let back = b.remediate(&eip_crn, "restore", &[], false).await;
    assert!(!back.success && back.error.contains("cannot be had back"), "{back:?}");

    let (instance, _) = run(&b.ec2, &s, "ami-0123456789abcdef0", "web-1").await;
    let held = allocate(&b.ec2).await;
    b.ec2
        .associate_address()
        .allocation_id(&held)
        .instance_id(&instance)
        .send()
        .await
        .unwrap();
    let r = b.remediate(&crn(A, "eip", &held), "release", &[], false).await;
    assert!(!r.success && r.error.contains("associated with"), "{r:?}");

    // Snapshot.
    let vol = volume(&b.ec2, &format!("{A}a"), 5, VolumeType::Gp3, &[]).await;
    let snap = b.ec2.create_snapshot().volume_id(&vol).send().await.unwrap();
    let snap = snap.snapshot_id().unwrap().to_owned();
    let snap_crn = crn(A, "snapshot", &snap);
    b.validated(&snap_crn, "snapshot_delete").await;
    assert!(b.ec2.describe_snapshots().snapshot_ids(&snap).send().await.is_ok());
    let del = b.ok(&snap_crn, "snapshot_delete", &[]).await;
    assert_eq!(
        (del.status.as_str(), del.snapshot["volume_id"].as_str()),
        ("deleted", vol.as_str())
    );
    assert!(b.ec2.describe_snapshots().snapshot_ids(&snap).send().await.is_err());
    assert_eq!(b.ok(&snap_crn, "snapshot_delete", &[]).await.status, "deleted");

    // NAT gateway: its address stays allocated.
    let nat_eip = allocate(&b.ec2).await;
    let nat = b
        .ec2
        .create_nat_gateway()
        .subnet_id(&s.subnet)
        .allocation_id(&nat_eip)
        .send()
        .await
        .unwrap();
    let nat = nat.nat_gateway().unwrap().nat_gateway_id().unwrap().to_owned();
    let nat_state = |ec2: aws_sdk_ec2::Client, id: String| async move {
        let out = ec2.describe_nat_gateways().nat_gateway_ids(id).send().await.unwrap();
        out.nat_gateways()[0].state().unwrap().as_str().to_owned()
    };
    let nat_crn = crn(A, "nat-gateway", &nat);
    b.validated(&nat_crn, "delete").await;
    assert_eq!(nat_state(b.ec2.clone(), nat.clone()).await, "available");
    let del = b.ok(&nat_crn, "delete", &[]).await;
    assert_eq!(del.snapshot["subnet_id"], s.subnet);
    assert_eq!(del.snapshot["allocation_ids"], nat_eip);
    assert_eq!(nat_state(b.ec2.clone(), nat.clone()).await, "deleted");
    assert_eq!(b.ok(&nat_crn, "delete", &[]).await.status, "deleted");
    assert!(b.ec2.describe_addresses().allocation_ids(&nat_eip).send().await.is_ok());
}

#[tokio::test]
async fn load_balancers_and_log_groups_are_deleted_once_unless_protected() {
    use aws_sdk_elasticloadbalancingv2::types::LoadBalancerAttribute;
    let mut b = Bench::start().await;
    let mut s = Seeded::default();
    network(&b.ec2, &mut s, "10.1").await;
    let elb = client!(aws_sdk_elasticloadbalancingv2, b.moto, A);
    let logs = client!(aws_sdk_cloudwatchlogs, b.moto, A);
    let subnet2 = b
        .ec2
        .create_subnet()
        .vpc_id(&s.vpc)
        .cidr_block("10.1.2.0/24")
        .availability_zone(format!("{A}b"))
        .send()
        .await
        .unwrap();
    let subnet2 = subnet2.subnet().unwrap().subnet_id().unwrap().to_owned();
    let lb = elb
        .create_load_balancer()
        .name("web")
        .subnets(&s.subnet)
        .subnets(&subnet2)
        .send()
        .await
        .unwrap();
    let arn = lb.load_balancers()[0].load_balancer_arn().unwrap().to_owned();
    let lb_crn = crn(A, "load-balancer", &elb_id(&arn));
    let protect = |on: bool| {
        elb.modify_load_balancer_attributes()
            .load_balancer_arn(&arn)
            .attributes(
                LoadBalancerAttribute::builder()
                    .key("deletion_protection.enabled")
                    .value(on.to_string())
                    .build(),
            )
            .send()
    };
    let count = || async {
        elb.describe_load_balancers()
            .send()
            .await
            .unwrap()
            .load_balancers()
            .len()
    };

    protect(true).await.unwrap();
    let proof = b.reversibility(&lb_crn, "delete").await;
    assert!(!proof.safe && proof.reason.contains("deletion protection"), "{proof:?}");
    for dry_run in [true, false] {
        let r = b.remediate(&lb_crn, "delete", &[], dry_run).await;
        assert!(!r.success && r.error.contains("deletion protection"), "{r:?}");
    }
    assert_eq!(count().await, 1);
    protect(false).await.unwrap();
    assert!(b.reversibility(&lb_crn, "delete").await.safe);
    b.validated(&lb_crn, "delete").await;
    assert_eq!(count().await, 1, "a dry run deletes nothing");
    let del = b.ok(&lb_crn, "delete", &[]).await;
    assert_eq!(del.snapshot["arn"], arn);
    assert_eq!(del.snapshot["name"], "web");
    assert_eq!(count().await, 0);
    assert_eq!(b.ok(&lb_crn, "delete", &[]).await.status, "deleted");

    let group = "/app/legacy";
    logs.create_log_group().log_group_name(group).send().await.unwrap();
    logs.put_retention_policy()
        .log_group_name(group)
        .retention_in_days(14)
        .send()
        .await
        .unwrap();
    let group_crn = graph_crn("log-group", group);
    let proof = b.reversibility(&group_crn, "delete").await;
    assert!(
        !proof.safe && proof.reason.contains("irreversible") && proof.reason.contains("exported"),
        "{proof:?}"
    );
    let groups = || async { logs.describe_log_groups().send().await.unwrap().log_groups().len() };
    b.validated(&group_crn, "delete").await;
    assert_eq!(groups().await, 1);
    let del = b.ok(&group_crn, "delete", &[]).await;
    assert_eq!(del.snapshot["retention_days"], "14");
    assert_eq!(groups().await, 0);
    assert_eq!(b.ok(&group_crn, "delete", &[]).await.status, "deleted");
    let back = b.remediate(&group_crn, "restore", &[], false).await;
    assert!(!back.success && back.error.contains("exported"), "{back:?}");
}

#[tokio::test]
async fn isolation_swaps_the_groups_for_a_deny_all_group_and_the_revert_puts_them_back() {
    let mut b = Bench::start().await;
    let mut s = Seeded::default();
    network(&b.ec2, &mut s, "10.1").await;
    let second = security_group(&b.ec2, &s.vpc, "app", "app tier").await;
    let r = b
        .ec2
        .run_instances()
        .image_id("ami-0123456789abcdef0")
        .instance_type(InstanceType::T3Small)
        .min_count(1)
        .max_count(1)
        .subnet_id(&s.subnet)
        .security_group_ids(&s.sg)
        .security_group_ids(&second)
        .tag_specifications(tags(ResourceType::Instance, &[("Name", "web-1")]))
        .send()
        .await
        .unwrap();
    let id = r.instances()[0].instance_id().unwrap().to_owned();
    let original = b.groups(&id).await;
    assert_eq!(original.len(), 2);
    let crn = graph_crn("instance", &id);

    let q = b.quarantine(&crn, "ISOLATE").await;
    assert!(q.success, "{q:?}");
    for g in &original {
        assert!(q.message.contains(g.as_str()), "the message names {g}: {}", q.message);
    }
    let deny_filter = || {
        vec![
            Filter::builder().name("vpc-id").values(&s.vpc).build(),
            Filter::builder().name("group-name").values("svc-quarantine").build(),
        ]
    };
    let listed = b
        .ec2
        .describe_security_groups()
        .set_filters(Some(deny_filter()))
        .send()
        .await
        .unwrap();
    assert_eq!(listed.security_groups().len(), 1);
    let deny = &listed.security_groups()[0];
    assert!(
        deny.ip_permissions().is_empty() && deny.ip_permissions_egress().is_empty(),
        "{deny:?}"
    );
    let deny_id = deny.group_id().unwrap().to_owned();
    assert_eq!(b.groups(&id).await, [deny_id.as_str()]);
    let i = b.instance(&id).await;
    let mut recorded: Vec<String> = tag_value(i.tags(), "svc:quarantine:groups")
        .unwrap()
        .split(',')
        .map(str::to_owned)
        .collect();
    recorded.sort();
    assert_eq!(recorded, original);
    assert_eq!(
        tag_value(i.tags(), "svc:quarantined").as_deref(),
        Some("compromised credentials")
    );

    // Retried: the record of the original groups stands, no second group.
    assert!(b.quarantine(&crn, "ISOLATE").await.success);
    let i = b.instance(&id).await;
    let mut again: Vec<String> = tag_value(i.tags(), "svc:quarantine:groups")
        .unwrap()
        .split(',')
        .map(str::to_owned)
        .collect();
    again.sort();
    assert_eq!(again, original);
    let listed = b.ec2.describe_security_groups().set_filters(Some(deny_filter())).send();
    assert_eq!(listed.await.unwrap().security_groups().len(), 1);

    // The daemon's revert: `restore` with what its quarantine payload holds.
    let revert = [("quarantine_action", "ISOLATE"), ("state_before", "running")];
    let dry = b.remediate(&crn, "restore", &revert, true).await;
    assert!(dry.success, "{dry:?}");
    assert_eq!(b.groups(&id).await, [deny_id.as_str()], "a dry run reverts nothing");
    let back = b.ok(&crn, "restore", &revert).await;
    assert_eq!(back.status, "restored");
    assert_eq!(b.groups(&id).await, original);
    let i = b.instance(&id).await;
    assert!(
        i.tags().iter().all(|t| !t.key().unwrap().starts_with("svc:quarantine")),
        "{:?}",
        i.tags()
    );
    // Reverted again: nothing left to do, the groups stay.
    assert_eq!(b.ok(&crn, "restore", &revert).await.status, "restored");
    assert_eq!(b.groups(&id).await, original);

    // STOP, and its revert starting it again; DELETE does not terminate.
    let q = b.quarantine(&crn, "STOP").await;
    assert!(q.success && q.message == "resource stopped", "{q:?}");
    assert_eq!(b.state(&id).await, "stopped");
    b.ok(
        &crn,
        "restore",
        &[("quarantine_action", "STOP"), ("state_before", "running")],
    )
    .await;
    assert_eq!(b.state(&id).await, "running");
    let q = b.quarantine(&crn, "DELETE").await;
    assert!(!q.success && q.message.contains("does not terminate"), "{q:?}");
    assert_eq!(b.state(&id).await, "running");
    let q = b.quarantine(&crn, "NUKE").await;
    assert!(!q.success && q.message.contains("unknown quarantine action"), "{q:?}");
}

#[tokio::test]
async fn reversibility_is_answered_from_the_resource() {
    let mut b = Bench::start().await;
    let mut s = Seeded::default();
    network(&b.ec2, &mut s, "10.1").await;
    let (plain, root) = run(&b.ec2, &s, "ami-0123456789abcdef0", "web-1").await;
    let (guarded, _) = run(&b.ec2, &s, "ami-0123456789abcdef0", "web-2").await;
    b.ec2
        .modify_instance_attribute()
        .instance_id(&guarded)
        .disable_api_termination(aws_sdk_ec2::types::AttributeBooleanValue::builder().value(true).build())
        .send()
        .await
        .unwrap();

    for intent in ["stop", "delete"] {
        let p = b.reversibility(&graph_crn("instance", &guarded), intent).await;
        assert!(
            !p.safe && p.reason.contains("termination protection"),
            "{intent}: {p:?}"
        );
    }
    let p = b.reversibility(&graph_crn("instance", &plain), "stop").await;
    assert!(p.safe && p.reason.contains("starting"), "{p:?}");
    let p = b.reversibility(&graph_crn("instance", &plain), "delete").await;
    assert!(
        !p.safe && p.reason.contains(&root) && p.reason.contains("DeleteOnTermination"),
        "{p:?}"
    );

    let eip = allocate(&b.ec2).await;
    let p = b.reversibility(&crn(A, "eip", &eip), "release").await;
    assert!(!p.safe && p.reason.contains("cannot be had back"), "{p:?}");

    let vol = volume(&b.ec2, &format!("{A}a"), 8, VolumeType::Gp3, &[]).await;
    let p = b.reversibility(&crn(A, "volume", &vol), "delete").await;
    assert!(p.safe && p.reason.contains("no snapshot yet"), "{p:?}");
    let snap = b.ec2.create_snapshot().volume_id(&vol).send().await.unwrap();
    let p = b.reversibility(&crn(A, "volume", &vol), "delete").await;
    assert!(p.safe && p.reason.contains(snap.snapshot_id().unwrap()), "{p:?}");
    let p = b.reversibility(&crn(A, "volume", &root), "snapshot_delete").await;
    assert!(!p.safe && p.reason.contains("running"), "{p:?}");

    let p = b
        .reversibility(&crn(A, "instance", "i-0000000000000dead"), "stop")
        .await;
    assert!(!p.safe && p.reason.contains("i-0000000000000dead"), "{p:?}");
}

#[tokio::test]
async fn bad_requests_get_clear_errors() {
    let mut b = Bench::start().await;
    let missing = crn(A, "instance", "i-0000000000000dead");
    for dry_run in [true, false] {
        let r = b.remediate(&missing, "stop", &[], dry_run).await;
        assert!(!r.success && r.status == "failed", "{r:?}");
        assert!(r.error.contains("i-0000000000000dead"), "{}", r.error);
        assert!(
            r.error.contains("NotFound") || r.error.contains("not found"),
            "{}",
            r.error
        );
    }
    let r = b.remediate("crn:svc:aws:us-east-1", "stop", &[], false).await;
    assert!(!r.success && r.error.contains("invalid crn"), "{r:?}");
    let r = b
        .remediate(
            &format!("crn:svc:aws:{A}:210987654321:instance:i-1"),
            "stop",
            &[],
            false,
        )
        .await;
    assert!(!r.success && r.error.contains("account 210987654321"), "{r:?}");
    let r = b.remediate(&crn(A, "instance", "i-1"), "explode", &[], false).await;
    assert!(!r.success && r.error.contains("does not explode"), "{r:?}");
    let q = b.quarantine("not a crn", "ISOLATE").await;
    assert!(!q.success && q.message.contains("invalid crn"), "{q:?}");
    let p = b.reversibility("crn:svc:aws", "delete").await;
    assert!(!p.safe && p.reason.contains("invalid crn"), "{p:?}");
}

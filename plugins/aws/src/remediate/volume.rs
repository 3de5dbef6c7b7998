//! An EBS volume: snapshot it, then delete it; restore it from that
//! snapshot.
//!
//! The snapshot carries what a restore needs as tags (`svc:remediation:*`:
//! the volume's id, zone, type, IOPS, throughput, the instance and device
//! it was attached to, and an idempotency token), next to the volume's own
//! tags. So a retried delete finds the snapshot it made before, and a
//! restore works from the snapshot alone, even when the daemon lost the
//! snapshot map. The restored volume is tagged with the snapshot it came
//! from, so a retried restore finds it instead of making another.
//!
//! Decided: a volume attached to an instance that is not stopped is not
//! deleted (it would have to be detached from a running machine); one
//! attached to a stopped instance is detached first, and its restore
//! attaches the new volume to the same device when that instance still
//! exists (running or stopped), else leaves it available and says so.

use std::collections::HashMap;

use aws_sdk_ec2::types::{Filter, ResourceType, Snapshot, SnapshotState, Tag, TagSpecification, Volume, VolumeType};

use super::instance::{describe_instance, find_instance, state_of};
use super::target::{DELETED, Done, RESTORED, TAG_PREFIX, Target, dry_ran, is_gone, tags_json, token, wait_for, why};

const SOURCE: &str = "svc:remediation:volume";
const TOKEN: &str = "svc:remediation:token";
const ZONE: &str = "svc:remediation:zone";
const TYPE: &str = "svc:remediation:volume-type";
const IOPS: &str = "svc:remediation:iops";
const THROUGHPUT: &str = "svc:remediation:throughput";
const ATTACHED_TO: &str = "svc:remediation:attached-to";
const DEVICE: &str = "svc:remediation:device";
/// On a restored volume: the snapshot it was made from.
const RESTORED_FROM: &str = "svc:remediation:restored-from";
/// Tags an EC2 resource may carry.
const MAX_TAGS: usize = 50;

fn tag(key: &str, value: &str) -> Tag {
    Tag::builder().key(key).value(value).build()
}

fn tag_of<'a>(tags: &'a [Tag], key: &str) -> Option<&'a str> {
    tags.iter().find(|t| t.key() == Some(key)).and_then(|t| t.value())
}

/// Tags a user may copy: not AWS's own (`aws:`, which cannot be set) and
/// not the plugin's.
fn user_tags(tags: &[Tag]) -> impl Iterator<Item = (&str, &str)> {
    tags.iter().filter_map(|t| {
        let key = t.key()?;
        (!key.starts_with("aws:") && !key.starts_with(TAG_PREFIX)).then_some((key, t.value().unwrap_or("")))
    })
}

fn filter(name: &str, value: &str) -> Filter {
    Filter::builder().name(name).values(value).build()
}

/// The volume `id`, `None` when EC2 has none (or it is being deleted).
pub async fn describe_volume(t: &Target, id: &str) -> Result<Option<Volume>, String> {
    let call = t.ec2().describe_volumes().volume_ids(id).send();
    match t.call("ec2", "DescribeVolumes", call).await {
        Ok(out) => Ok(out
            .volumes()
            .iter()
            .find(|v| v.volume_id() == Some(id))
            .filter(|v| !matches!(v.state().map(|s| s.as_str()), Some("deleting" | "deleted")))
            .cloned()),
        Err(e) if is_gone(&e) => Ok(None),
        Err(e) => Err(why(&e)),
    }
}

/// Own snapshots matching `filters`, newest first, failed ones left out.
async fn own_snapshots(t: &Target, filters: Vec<Filter>) -> Result<Vec<Snapshot>, String> {
    let call = t
        .ec2()
        .describe_snapshots()
        .owner_ids("self")
        .set_filters(Some(filters))
        .send();
    let out = t.call("ec2", "DescribeSnapshots", call).await.map_err(|e| why(&e))?;
    let mut found: Vec<Snapshot> = out
        .snapshots()
        .iter()
        .filter(|s| s.state() != Some(&SnapshotState::Error))
        .cloned()
        .collect();
    found.sort_by_key(|s| std::cmp::Reverse(s.start_time().map(|d| d.secs())));
    Ok(found)
}

/// The completed snapshots of volume `id` (for the reversibility check).
pub async fn snapshots_of(t: &Target, id: &str) -> Result<Vec<Snapshot>, String> {
    let all = own_snapshots(t, vec![filter("volume-id", id)]).await?;
    Ok(all
        .into_iter()
        .filter(|s| s.state() == Some(&SnapshotState::Completed))
        .collect())
}

/// The snapshot map of a snapshot this plugin made before a deletion.
fn record(s: &Snapshot) -> Done {
    let tags = s.tags();
    let size = s.volume_size().map(|g| g.to_string());
    let attached = tag_of(tags, ATTACHED_TO);
    Done::new(DELETED)
        .with("snapshot_id", s.snapshot_id())
        .with("volume_id", tag_of(tags, SOURCE))
        .with("availability_zone", tag_of(tags, ZONE))
        .with("volume_type", tag_of(tags, TYPE))
        .with("size_gib", size.as_deref())
        .with("iops", tag_of(tags, IOPS))
        .with("throughput", tag_of(tags, THROUGHPUT))
        .with("encrypted", s.encrypted().map(|e| e.to_string()).as_deref())
        .with("attached_to", attached)
        .with("device", tag_of(tags, DEVICE))
        .with("tags", Some(&tags_json(user_tags(tags))))
        .with(
            "previous_state",
            Some(if attached.is_some() { "in-use" } else { "available" }),
        )
}

/// Waits for a snapshot to complete; an error when it failed or is still
/// pending after the wait (a retry finds and waits for the same one).
async fn completed(t: &Target, id: &str) -> Result<Snapshot, String> {
    let done = wait_for(|| async move {
        let found = own_snapshots(t, vec![filter("snapshot-id", id)]).await?;
        match found.into_iter().next() {
            None => Err(format!("snapshot {id} failed or disappeared")),
            Some(s) if s.state() == Some(&SnapshotState::Completed) => Ok(Some(s)),
            Some(_) => Ok(None),
        }
    })
    .await?;
    done.ok_or_else(|| format!("snapshot {id} is still pending; retry the action, which waits for the same snapshot"))
}

/// Snapshots the volume (or finds the snapshot an earlier attempt made),
/// detaches it from its stopped instance, and deletes it.
pub async fn delete(t: &Target, props: &HashMap<String, String>, dry_run: bool) -> Result<Done, String> {
    let saga = props.get("saga_id").map_or("", String::as_str);
    let token = token(&[&t.id, saga]);
    let Some(v) = describe_volume(t, &t.id).await? else {
        // Gone: deleted by an earlier attempt (whose snapshot is reported
        // again) or by someone else.
        let made = own_snapshots(t, vec![filter(&format!("tag:{SOURCE}"), &t.id)]).await?;
        return Ok(made
            .first()
            .map_or_else(|| Done::new(DELETED).with("previous_state", Some("not found")), record));
    };
    let attachment = v
        .attachments()
        .iter()
        .find(|a| a.instance_id().is_some_and(|i| !i.is_empty()));
    let attached = attachment.and_then(|a| a.instance_id().map(|i| (i.to_owned(), a.device().unwrap_or(""))));
    if let Some((instance, _)) = &attached {
        let holder = describe_instance(&t.other("instance", instance)).await?;
        let state = state_of(&holder);
        if state != "stopped" {
            return Err(format!(
                "volume {} is attached to instance {instance}, which is {state}: stop the instance first",
                t.id
            ));
        }
    }
    let own: Vec<(&str, &str)> = user_tags(v.tags()).collect();
    if own.len() + 9 > MAX_TAGS {
        return Err(format!(
            "volume {} has {} tags: its snapshot cannot hold them and the plugin's 9 (at most {MAX_TAGS})",
            t.id,
            own.len()
        ));
    }
    let ec2 = t.ec2();
    let found = own_snapshots(
        t,
        vec![
            filter(&format!("tag:{SOURCE}"), &t.id),
            filter(&format!("tag:{TOKEN}"), &token),
        ],
    )
    .await?;
    let earlier = found.first().and_then(|s| s.snapshot_id()).map(str::to_owned);

    if dry_run {
        if earlier.is_none() {
            let call = ec2.create_snapshot().volume_id(&t.id).dry_run(true).send();
            dry_ran(t.call("ec2", "CreateSnapshot", call).await)?;
        }
        if let Some((instance, _)) = &attached {
            let call = ec2
                .detach_volume()
                .volume_id(&t.id)
                .instance_id(instance)
                .dry_run(true)
                .send();
            dry_ran(t.call("ec2", "DetachVolume", call).await)?;
        }
        let call = ec2.delete_volume().volume_id(&t.id).dry_run(true).send();
        dry_ran(t.call("ec2", "DeleteVolume", call).await)?;
        return Ok(Done::new(DELETED));
    }

    let snapshot_id = match earlier {
        Some(id) => id,
        None => {
            let mut spec = TagSpecification::builder().resource_type(ResourceType::Snapshot);
            for (k, val) in &own {
                spec = spec.tags(tag(k, val));
            }
            let zone = v.availability_zone().unwrap_or("");
            let kind = v.volume_type().map_or("", |k| k.as_str());
            let iops = v.iops().map(|i| i.to_string()).unwrap_or_default();
            let throughput = v.throughput().map(|i| i.to_string()).unwrap_or_default();
            let (instance, device) = attached.clone().unwrap_or_default();
            for (k, val) in [
                (SOURCE, t.id.as_str()),
                (TOKEN, &token),
                (ZONE, zone),
                (TYPE, kind),
                (IOPS, &iops),
                (THROUGHPUT, &throughput),
                (ATTACHED_TO, &instance),
                (DEVICE, device),
            ] {
                if !val.is_empty() {
                    spec = spec.tags(tag(k, val));
                }
            }
            let call = ec2
                .create_snapshot()
                .volume_id(&t.id)
                .description(format!("svc: {} before its deletion", t.id))
                .tag_specifications(spec.build())
                .send();
            let made = t.call("ec2", "CreateSnapshot", call).await.map_err(|e| why(&e))?;
            made.snapshot_id()
                .ok_or("CreateSnapshot answered without a snapshot id")?
                .to_owned()
        }
    };
    let snapshot = completed(t, &snapshot_id).await?;

    if let Some((instance, _)) = &attached {
        let call = ec2.detach_volume().volume_id(&t.id).instance_id(instance).send();
        t.call("ec2", "DetachVolume", call).await.map_err(|e| why(&e))?;
        let detached = wait_for(|| async move {
            let v = describe_volume(t, &t.id).await?;
            Ok(v.is_none_or(|v| v.attachments().is_empty()).then_some(()))
        })
        .await?;
        detached.ok_or_else(|| format!("volume {} is still detaching; retry the action", t.id))?;
    }
    let call = ec2.delete_volume().volume_id(&t.id).send();
    match t.call("ec2", "DeleteVolume", call).await {
        Ok(_) => {}
        Err(e) if is_gone(&e) => {}
        Err(e) => return Err(why(&e)),
    }
    Ok(record(&snapshot))
}

/// Creates a volume from the snapshot the deletion made, in the same zone
/// with the same type, IOPS, throughput and tags, and attaches it where the
/// old one was. Nothing is done when the volume was never deleted; a
/// volume an earlier attempt restored is found by its tag.
pub async fn restore(t: &Target, props: &HashMap<String, String>, dry_run: bool) -> Result<Done, String> {
    if describe_volume(t, &t.id).await?.is_some() {
        return Ok(Done::new(RESTORED).with("volume_id", Some(&t.id)));
    }
    let snapshot = match props.get("snapshot_id") {
        Some(id) => own_snapshots(t, vec![filter("snapshot-id", id)])
            .await?
            .into_iter()
            .next(),
        None => own_snapshots(t, vec![filter(&format!("tag:{SOURCE}"), &t.id)])
            .await?
            .into_iter()
            .next(),
    };
    let snapshot = snapshot.ok_or_else(|| {
        format!(
            "volume {} is gone and no snapshot of it made by this plugin was found (tag {SOURCE})",
            t.id
        )
    })?;
    let snapshot_id = snapshot.snapshot_id().unwrap_or_default().to_owned();
    let tags = snapshot.tags();
    let zone = tag_of(tags, ZONE)
        .ok_or_else(|| format!("snapshot {snapshot_id} does not record its volume's zone (tag {ZONE})"))?;
    let kind = tag_of(tags, TYPE).map(VolumeType::from);
    let number = |key| tag_of(tags, key).and_then(|v| v.parse::<i32>().ok());
    let (iops, throughput) = match kind.as_ref().map(VolumeType::as_str) {
        Some("io1" | "io2") => (number(IOPS), None),
        Some("gp3") => (number(IOPS), number(THROUGHPUT)),
        _ => (None, None),
    };
    let ec2 = t.ec2();
    let create = || {
        let mut spec = TagSpecification::builder()
            .resource_type(ResourceType::Volume)
            .tags(tag(RESTORED_FROM, &snapshot_id));
        for (k, v) in user_tags(tags) {
            spec = spec.tags(tag(k, v));
        }
        ec2.create_volume()
            .snapshot_id(&snapshot_id)
            .availability_zone(zone)
            .set_volume_type(kind.clone())
            .set_size(snapshot.volume_size())
            .set_iops(iops)
            .set_throughput(throughput)
            .tag_specifications(spec.build())
    };
    let restored = t
        .ec2()
        .describe_volumes()
        .filters(filter(&format!("tag:{RESTORED_FROM}"), &snapshot_id));
    let restored = t
        .call("ec2", "DescribeVolumes", restored.send())
        .await
        .map_err(|e| why(&e))?;
    let earlier = restored
        .volumes()
        .iter()
        .find(|v| !matches!(v.state().map(|s| s.as_str()), Some("deleting" | "deleted" | "error")))
        .and_then(|v| v.volume_id())
        .map(str::to_owned);
    if dry_run {
        if earlier.is_none() {
            let call = create().dry_run(true).send();
            dry_ran(t.call("ec2", "CreateVolume", call).await)?;
        }
        return Ok(Done::new(RESTORED));
    }
    let volume_id = match earlier {
        Some(id) => id,
        None => {
            let made = t
                .call("ec2", "CreateVolume", create().send())
                .await
                .map_err(|e| why(&e))?;
            made.volume_id()
                .ok_or("CreateVolume answered without a volume id")?
                .to_owned()
        }
    };
    let ready = wait_for(|| {
        let id = volume_id.clone();
        async move {
            let v = describe_volume(t, &id).await?;
            Ok(v.filter(|v| v.state().is_some_and(|s| s.as_str() != "creating")))
        }
    })
    .await?
    .ok_or_else(|| format!("volume {volume_id} is still being created from {snapshot_id}; retry the restore"))?;
    let done = Done::new(RESTORED)
        .with("volume_id", Some(&volume_id))
        .with("snapshot_id", Some(&snapshot_id))
        .with("availability_zone", Some(zone));
    let (Some(instance), Some(device)) = (tag_of(tags, ATTACHED_TO), tag_of(tags, DEVICE)) else {
        return Ok(done);
    };
    if !ready.attachments().is_empty() {
        return Ok(done.with("attached_to", Some(instance)).with("device", Some(device)));
    }
    let holder = find_instance(&t.other("instance", instance)).await?;
    let alive = holder.is_some_and(|i| !matches!(state_of(&i), "terminated" | "shutting-down"));
    if !alive {
        return Ok(done.with("not_attached", Some(&format!("instance {instance} no longer exists"))));
    }
    let call = ec2
        .attach_volume()
        .volume_id(&volume_id)
        .instance_id(instance)
        .device(device)
        .send();
    t.call("ec2", "AttachVolume", call).await.map_err(|e| {
        format!(
            "volume {volume_id} was restored from {snapshot_id} but not attached to {instance} at {device}: {}",
            why(&e)
        )
    })?;
    Ok(done.with("attached_to", Some(instance)).with("device", Some(device)))
}

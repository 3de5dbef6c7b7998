//! `ISOLATE` on an instance and its revert: its security groups are
//! replaced by a group that allows nothing in or out (`svc-quarantine`,
//! one per VPC, created on first use, its default egress rule removed).
//! The groups it had are recorded first, on the instance (tag
//! `svc:quarantine:groups`; a secondary interface keeps its own on
//! itself), and the instance is tagged `svc:quarantined` with the reason
//! once done. A retry finds the record and does not overwrite it; the
//! revert puts back exactly the recorded groups, then removes the tags.
//! The quarantine group stays (other instances of the VPC may be in it).

use aws_sdk_ec2::types::{Filter, ResourceType, SecurityGroup, Tag, TagSpecification};

use super::instance::{describe_instance, state_of};
use super::target::{Done, RESTORED, Target, dry_ran, why};

/// Tag of a quarantined instance (value: the reason).
pub const QUARANTINED: &str = "svc:quarantined";
/// Tag holding the group ids an instance (or interface) had; more than
/// [`IDS_PER_TAG`] ids go on in `svc:quarantine:groups:2`, `:3`, ...
pub const GROUPS: &str = "svc:quarantine:groups";
/// The deny-all group's name, and the tag that marks it.
pub const GROUP_NAME: &str = "svc-quarantine";
const GROUP_TAG: &str = "svc:quarantine";
/// Group ids (21 characters and a comma) in one tag value of at most 256.
const IDS_PER_TAG: usize = 12;
/// A tag value's length limit.
const TAG_VALUE_MAX: usize = 256;

fn tag(key: &str, value: &str) -> Tag {
    Tag::builder().key(key).value(value).build()
}

/// The recording of `ids` as tags.
fn encode(ids: &[String]) -> Vec<Tag> {
    ids.chunks(IDS_PER_TAG)
        .enumerate()
        .map(|(i, chunk)| {
            let key = if i == 0 {
                GROUPS.to_owned()
            } else {
                format!("{GROUPS}:{}", i + 1)
            };
            tag(&key, &chunk.join(","))
        })
        .collect()
}

/// The keys of a recording among `tags`, in order.
fn recorded_keys(tags: &[Tag]) -> Vec<(usize, &str)> {
    let mut keys: Vec<(usize, &str)> = tags
        .iter()
        .filter_map(|t| {
            let key = t.key()?;
            let n = match key.strip_prefix(GROUPS)? {
                "" => 1,
                rest => rest.strip_prefix(':')?.parse().ok()?,
            };
            Some((n, key))
        })
        .collect();
    keys.sort_unstable();
    keys
}

/// The group ids recorded in `tags`; empty when there is no recording.
fn decode(tags: &[Tag]) -> Vec<String> {
    recorded_keys(tags)
        .into_iter()
        .filter_map(|(_, key)| tags.iter().find(|t| t.key() == Some(key)).and_then(|t| t.value()))
        .flat_map(|v| v.split(','))
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
        .collect()
}

fn filter(name: &str, value: &str) -> Filter {
    Filter::builder().name(name).values(value).build()
}

async fn find_group(t: &Target, vpc: &str) -> Result<Option<SecurityGroup>, String> {
    let call = t
        .ec2()
        .describe_security_groups()
        .filters(filter("vpc-id", vpc))
        .filters(filter("group-name", GROUP_NAME))
        .send();
    let out = t
        .call("ec2", "DescribeSecurityGroups", call)
        .await
        .map_err(|e| why(&e))?;
    Ok(out.security_groups().first().cloned())
}

/// The VPC's deny-all group: found (or created) and stripped of any rule.
async fn deny_group(t: &Target, vpc: &str) -> Result<String, String> {
    let mut group = find_group(t, vpc).await?;
    if group.is_none() {
        let spec = TagSpecification::builder()
            .resource_type(ResourceType::SecurityGroup)
            .tags(tag(GROUP_TAG, "deny-all"))
            .build();
        let call = t
            .ec2()
            .create_security_group()
            .group_name(GROUP_NAME)
            .description("svc quarantine: no traffic in or out")
            .vpc_id(vpc)
            .tag_specifications(spec)
            .send();
        match t.call("ec2", "CreateSecurityGroup", call).await {
            Ok(_) => {}
            // Made meanwhile by another quarantine.
            Err(e) if e.code.as_deref() == Some("InvalidGroup.Duplicate") => {}
            Err(e) => return Err(why(&e)),
        }
        group = find_group(t, vpc).await?;
    }
    let g = group.ok_or_else(|| format!("security group {GROUP_NAME} of {vpc} was created but is not listed"))?;
    let id = g
        .group_id()
        .ok_or("DescribeSecurityGroups answered a group without an id")?
        .to_owned();
    if !g.ip_permissions().is_empty() {
        let call = t
            .ec2()
            .revoke_security_group_ingress()
            .group_id(&id)
            .set_ip_permissions(Some(g.ip_permissions().to_vec()))
            .send();
        t.call("ec2", "RevokeSecurityGroupIngress", call)
            .await
            .map_err(|e| why(&e))?;
    }
    if !g.ip_permissions_egress().is_empty() {
        let call = t
            .ec2()
            .revoke_security_group_egress()
            .group_id(&id)
            .set_ip_permissions(Some(g.ip_permissions_egress().to_vec()))
            .send();
        t.call("ec2", "RevokeSecurityGroupEgress", call)
            .await
            .map_err(|e| why(&e))?;
    }
    Ok(id)
}

/// An instance's interfaces other than the primary one (device index 0),
/// with their tags.
async fn secondary_interfaces(t: &Target) -> Result<Vec<aws_sdk_ec2::types::NetworkInterface>, String> {
    let call = t
        .ec2()
        .describe_network_interfaces()
        .filters(filter("attachment.instance-id", &t.id))
        .send();
    let out = t
        .call("ec2", "DescribeNetworkInterfaces", call)
        .await
        .map_err(|e| why(&e))?;
    Ok(out
        .network_interfaces()
        .iter()
        .filter(|n| n.attachment().and_then(|a| a.device_index()).is_some_and(|i| i != 0))
        .cloned()
        .collect())
}

async fn create_tags(t: &Target, resource: &str, tags: Vec<Tag>) -> Result<(), String> {
    let call = t.ec2().create_tags().resources(resource).set_tags(Some(tags)).send();
    t.call("ec2", "CreateTags", call).await.map(|_| ()).map_err(|e| why(&e))
}

async fn delete_tags(t: &Target, resource: &str, keys: Vec<String>) -> Result<(), String> {
    let tags = keys.iter().map(|k| Tag::builder().key(k).build()).collect();
    let call = t.ec2().delete_tags().resources(resource).set_tags(Some(tags)).send();
    t.call("ec2", "DeleteTags", call).await.map(|_| ()).map_err(|e| why(&e))
}

async fn set_groups(t: &Target, interface: Option<&str>, groups: Vec<String>) -> Result<(), String> {
    match interface {
        None => {
            let call = t
                .ec2()
                .modify_instance_attribute()
                .instance_id(&t.id)
                .set_groups(Some(groups))
                .send();
            t.call("ec2", "ModifyInstanceAttribute", call)
                .await
                .map_err(|e| why(&e))?;
        }
        Some(eni) => {
            let call = t
                .ec2()
                .modify_network_interface_attribute()
                .network_interface_id(eni)
                .set_groups(Some(groups))
                .send();
            t.call("ec2", "ModifyNetworkInterfaceAttribute", call)
                .await
                .map_err(|e| why(&e))?;
        }
    }
    Ok(())
}

/// `ISOLATE`: records the groups, then puts the instance (each of its
/// interfaces) in the deny-all group alone, then tags it quarantined.
pub async fn isolate(t: &Target, reason: &str) -> Result<String, String> {
    let i = describe_instance(t).await?;
    if matches!(state_of(&i), "terminated" | "shutting-down") {
        return Err(format!("instance {} is {}", t.id, state_of(&i)));
    }
    let vpc = i
        .vpc_id()
        .filter(|v| !v.is_empty())
        .ok_or_else(|| format!("instance {} is in no VPC", t.id))?;
    let deny = deny_group(t, vpc).await?;
    let current: Vec<String> = i
        .security_groups()
        .iter()
        .filter_map(|g| g.group_id())
        .map(str::to_owned)
        .collect();
    let mut recorded = decode(i.tags());
    if recorded.is_empty() {
        if current.is_empty() {
            // Nothing to record means nothing the revert could put back.
            return Err(format!(
                "instance {} lists no security groups: there is nothing to record and restore, so it is not isolated",
                t.id
            ));
        }
        if current == [deny.as_str()] {
            return Err(format!(
                "instance {} is in {GROUP_NAME} alone and no record of its groups ({GROUPS}) is left",
                t.id
            ));
        }
        create_tags(t, &t.id, encode(&current)).await?;
        recorded = current.clone();
    }
    for eni in secondary_interfaces(t).await? {
        let Some(id) = eni.network_interface_id() else { continue };
        let groups: Vec<String> = eni
            .groups()
            .iter()
            .filter_map(|g| g.group_id())
            .map(str::to_owned)
            .collect();
        if decode(eni.tag_set()).is_empty() && groups != [deny.as_str()] {
            create_tags(t, id, encode(&groups)).await?;
        }
        set_groups(t, Some(id), vec![deny.clone()]).await?;
    }
    if current != [deny.as_str()] {
        set_groups(t, None, vec![deny.clone()]).await?;
    }
    let mut why_tag: String = if reason.trim().is_empty() {
        "true".into()
    } else {
        reason.to_owned()
    };
    if why_tag.chars().count() > TAG_VALUE_MAX {
        why_tag = why_tag.chars().take(TAG_VALUE_MAX).collect();
    }
    create_tags(t, &t.id, vec![tag(QUARANTINED, &why_tag)]).await?;
    Ok(format!(
        "resource isolated: instance {} was in {} (kept in tag {GROUPS}), now in {deny} ({GROUP_NAME}: no traffic in or out)",
        t.id,
        recorded.join(",")
    ))
}

/// The revert of `ISOLATE`: the recorded groups back on each interface,
/// then the tags removed. An instance without a record is not (or no
/// longer) quarantined: nothing to do.
pub async fn revert(t: &Target, dry_run: bool) -> Result<Done, String> {
    let i = describe_instance(t).await?;
    let recorded = decode(i.tags());
    if recorded.is_empty() {
        return Ok(Done::new(RESTORED).with(
            "note",
            Some("the instance holds no quarantine record; nothing to restore"),
        ));
    }
    if dry_run {
        let call = t
            .ec2()
            .modify_instance_attribute()
            .instance_id(&t.id)
            .set_groups(Some(recorded))
            .dry_run(true)
            .send();
        dry_ran(t.call("ec2", "ModifyInstanceAttribute", call).await)?;
        return Ok(Done::new(RESTORED));
    }
    for eni in secondary_interfaces(t).await? {
        let Some(id) = eni.network_interface_id() else { continue };
        let groups = decode(eni.tag_set());
        if groups.is_empty() {
            continue;
        }
        set_groups(t, Some(id), groups).await?;
        let keys = recorded_keys(eni.tag_set())
            .into_iter()
            .map(|(_, k)| k.to_owned())
            .collect();
        delete_tags(t, id, keys).await?;
    }
    set_groups(t, None, recorded.clone()).await?;
    let mut keys: Vec<String> = recorded_keys(i.tags()).into_iter().map(|(_, k)| k.to_owned()).collect();
    keys.push(QUARANTINED.to_owned());
    delete_tags(t, &t.id, keys).await?;
    Ok(Done::new(RESTORED).with("groups", Some(&recorded.join(","))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_records_round_trip_over_several_tags() {
        let ids: Vec<String> = (0..30).map(|n| format!("sg-{n:017x}")).collect();
        let tags = encode(&ids);
        assert_eq!(tags.len(), 3);
        assert!(tags.iter().all(|t| t.value().is_some_and(|v| v.len() <= TAG_VALUE_MAX)));
        assert_eq!(tags[1].key(), Some("svc:quarantine:groups:2"));
        let mut shuffled = tags.clone();
        shuffled.reverse();
        shuffled.push(tag("Name", "web"));
        shuffled.push(tag("svc:quarantine:groupsx", "sg-x"));
        assert_eq!(decode(&shuffled), ids);
        assert_eq!(recorded_keys(&shuffled).len(), 3);
        assert!(decode(&[tag("Name", "web")]).is_empty());
    }
}

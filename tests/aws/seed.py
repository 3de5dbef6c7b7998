#!/usr/bin/env python3
"""Seeds a moto_server for tests/e2e_aws.rs with boto3 (installed with moto),
reads it back and changes it behind the daemon's back.

    seed.py ENDPOINT old REGION_A REGION_B     # resources that will be old
    seed.py ENDPOINT young REGION_A REGION_B   # resources created "now"
    seed.py ENDPOINT look REGION               # the region's EC2 resources as moto has them
    seed.py ENDPOINT start REGION INSTANCE     # starts an instance
    seed.py ENDPOINT attach REGION VOLUME INSTANCE DEVICE
    seed.py ENDPOINT retag REGION RESOURCE KEY VALUE   # a tag changed by hand
    seed.py ENDPOINT by-hand REGION ZONE GIB          # a volume made by hand
    seed.py ENDPOINT release REGION ALLOCATION        # an address released by hand

The test runs moto_server under libfaketime and moves its clock between the
two phases, so the "old" resources carry creation and stop times weeks in
the past. Prints what it created (by role), what it found, or what it did,
as one JSON object.
"""

import json
import sys

import boto3


def client(service, endpoint, region):
    return boto3.client(
        service,
        region_name=region,
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def tags(kind, pairs):
    return [{"ResourceType": kind, "Tags": [{"Key": k, "Value": v} for k, v in pairs]}]


def volume(ec2, zone, gib, pairs=()):
    args = {"AvailabilityZone": zone, "Size": gib, "VolumeType": "gp3"}
    if pairs:
        args["TagSpecifications"] = tags("volume", pairs)
    return ec2.create_volume(**args)["VolumeId"]


def instance(ec2, subnet, name, groups=()):
    args = {}
    if groups:
        args["SecurityGroupIds"] = list(groups)
    r = ec2.run_instances(
        ImageId="ami-0123456789abcdef0",
        InstanceType="t3.small",
        MinCount=1,
        MaxCount=1,
        SubnetId=subnet,
        TagSpecifications=tags("instance", [("Name", name)]),
        **args,
    )
    i = r["Instances"][0]
    return i["InstanceId"], i["BlockDeviceMappings"][0]["Ebs"]["VolumeId"]


def group(ec2, vpc, name, port, cidr):
    """A security group letting `cidr` in on TCP `port`."""
    gid = ec2.create_security_group(GroupName=name, Description=f"{name} traffic", VpcId=vpc)["GroupId"]
    rule = {"IpProtocol": "tcp", "FromPort": port, "ToPort": port, "IpRanges": [{"CidrIp": cidr}]}
    ec2.authorize_security_group_ingress(GroupId=gid, IpPermissions=[rule])
    return gid


def network(ec2, cidr):
    vpc = ec2.create_vpc(CidrBlock=f"{cidr}.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock=f"{cidr}.1.0/24")["Subnet"]["SubnetId"]
    return vpc, subnet


def old_a(endpoint, region):
    """Region A: waste and not-waste of every kind the test checks."""
    ec2 = client("ec2", endpoint, region)
    zone = f"{region}a"
    out = {}
    out["vpc"], out["subnet"] = network(ec2, "10.1")
    out["web_group"] = group(ec2, out["vpc"], "web", 443, "0.0.0.0/0")
    out["admin_group"] = group(ec2, out["vpc"], "admin", 22, "10.0.0.0/8")
    out["running"], out["running_root"] = instance(
        ec2, out["subnet"], "web", (out["web_group"], out["admin_group"])
    )
    out["stopped"], out["stopped_root"] = instance(ec2, out["subnet"], "batch")
    ec2.stop_instances(InstanceIds=[out["stopped"]])
    out["data_volume"] = volume(ec2, zone, 50, [("role", "data")])
    ec2.attach_volume(VolumeId=out["data_volume"], InstanceId=out["running"], Device="/dev/sdf")
    out["loose_volume"] = volume(ec2, zone, 100, [("team", "ml")])
    out["ignored_volume"] = volume(ec2, zone, 20, [("svc:ignore", "true")])
    out["kept_snapshot"] = ec2.create_snapshot(VolumeId=out["data_volume"])["SnapshotId"]
    gone = volume(ec2, zone, 40)
    out["orphan_snapshot"] = ec2.create_snapshot(VolumeId=gone)["SnapshotId"]
    ec2.delete_volume(VolumeId=gone)
    out["gone_volume"] = gone
    out["eip_associated"] = ec2.allocate_address(Domain="vpc")["AllocationId"]
    ec2.associate_address(AllocationId=out["eip_associated"], InstanceId=out["running"])
    out["eip_loose"] = ec2.allocate_address(Domain="vpc")["AllocationId"]

    elb = client("elbv2", endpoint, region)
    subnet2 = ec2.create_subnet(VpcId=out["vpc"], CidrBlock="10.1.2.0/24", AvailabilityZone=f"{region}b")
    out["subnet2"] = subnet2["Subnet"]["SubnetId"]
    lb = elb.create_load_balancer(Name="idle", Subnets=[out["subnet"], out["subnet2"]], Scheme="internet-facing")
    lb_arn = lb["LoadBalancers"][0]["LoadBalancerArn"]
    tg = elb.create_target_group(Name="empty", Protocol="HTTP", Port=80, VpcId=out["vpc"])
    tg_arn = tg["TargetGroups"][0]["TargetGroupArn"]
    elb.create_listener(
        LoadBalancerArn=lb_arn,
        Protocol="HTTP",
        Port=80,
        DefaultActions=[{"Type": "forward", "TargetGroupArn": tg_arn}],
    )
    out["lb"] = lb_arn.split(":loadbalancer/", 1)[1]
    out["tg"] = tg_arn.split(":targetgroup/", 1)[1]
    return out


def old_b(endpoint, region):
    """Region B: a running instance, a loose volume, a loose address."""
    ec2 = client("ec2", endpoint, region)
    out = {}
    out["vpc"], out["subnet"] = network(ec2, "10.2")
    out["running"], out["running_root"] = instance(ec2, out["subnet"], "worker")
    out["loose_volume"] = volume(ec2, f"{region}b", 30)
    out["eip_loose"] = ec2.allocate_address(Domain="vpc")["AllocationId"]
    return out


def young(endpoint, region):
    """A volume attached to nothing, created now: inside its grace period."""
    ec2 = client("ec2", endpoint, region)
    return {"young_volume": volume(ec2, f"{region}a", 10, [("team", "new")])}


def tag_map(pairs):
    return {t["Key"]: t["Value"] for t in pairs or []}


def look(endpoint, region):
    """The region's volumes, own snapshots, instances and security groups,
    each by id with what the test checks of it."""
    ec2 = client("ec2", endpoint, region)
    volumes = {
        v["VolumeId"]: {
            "zone": v["AvailabilityZone"],
            "size": v["Size"],
            "type": v["VolumeType"],
            "state": v["State"],
            "snapshot": v.get("SnapshotId") or None,
            "attached_to": [a["InstanceId"] for a in v.get("Attachments", [])],
            "tags": tag_map(v.get("Tags")),
        }
        for v in ec2.describe_volumes()["Volumes"]
    }
    snapshots = {
        s["SnapshotId"]: {
            "volume": s.get("VolumeId"),
            "size": s["VolumeSize"],
            "state": s["State"],
            "tags": tag_map(s.get("Tags")),
        }
        for s in ec2.describe_snapshots(OwnerIds=["self"])["Snapshots"]
    }
    instances = {
        i["InstanceId"]: {
            "state": i["State"]["Name"],
            # What DescribeInstances reports as the instance's groups.
            "groups": [g["GroupId"] for g in i.get("SecurityGroups", [])],
            "tags": tag_map(i.get("Tags")),
        }
        for r in ec2.describe_instances()["Reservations"]
        for i in r["Instances"]
    }
    groups = {
        g["GroupId"]: {
            "name": g["GroupName"],
            "vpc": g.get("VpcId"),
            "ingress": len(g.get("IpPermissions", [])),
            "egress": len(g.get("IpPermissionsEgress", [])),
            "tags": tag_map(g.get("Tags")),
        }
        for g in ec2.describe_security_groups()["SecurityGroups"]
    }
    return {"volumes": volumes, "snapshots": snapshots, "instances": instances, "groups": groups}


def start(endpoint, region, instance_id):
    ec2 = client("ec2", endpoint, region)
    ec2.start_instances(InstanceIds=[instance_id])
    state = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]["State"]
    return {instance_id: state["Name"]}


def attach(endpoint, region, volume_id, instance_id, device):
    ec2 = client("ec2", endpoint, region)
    ec2.attach_volume(VolumeId=volume_id, InstanceId=instance_id, Device=device)
    v = ec2.describe_volumes(VolumeIds=[volume_id])["Volumes"][0]
    return {volume_id: [a["InstanceId"] for a in v["Attachments"]]}


def retag(endpoint, region, resource_id, key, value):
    ec2 = client("ec2", endpoint, region)
    ec2.create_tags(Resources=[resource_id], Tags=[{"Key": key, "Value": value}])
    return {resource_id: {key: value}}


def by_hand(endpoint, region, zone, gib):
    ec2 = client("ec2", endpoint, region)
    return {"volume": volume(ec2, zone, int(gib), [("made", "by-hand")])}


def release(endpoint, region, allocation_id):
    ec2 = client("ec2", endpoint, region)
    ec2.release_address(AllocationId=allocation_id)
    return {"released": allocation_id}


def main():
    endpoint, command = sys.argv[1:3]
    args = sys.argv[3:]
    if command == "old":
        a, b = args
        out = {a: old_a(endpoint, a), b: old_b(endpoint, b)}
    elif command == "young":
        a, b = args
        out = {a: young(endpoint, a), b: young(endpoint, b)}
    elif command == "look":
        (region,) = args
        out = look(endpoint, region)
    elif command == "start":
        region, instance_id = args
        out = start(endpoint, region, instance_id)
    elif command == "attach":
        region, volume_id, instance_id, device = args
        out = attach(endpoint, region, volume_id, instance_id, device)
    elif command == "retag":
        region, resource_id, key, value = args
        out = retag(endpoint, region, resource_id, key, value)
    elif command == "by-hand":
        region, zone, gib = args
        out = by_hand(endpoint, region, zone, gib)
    elif command == "release":
        region, allocation_id = args
        out = release(endpoint, region, allocation_id)
    else:
        sys.exit(f"unknown command {command!r}: old, young, look, start, attach, retag, by-hand or release")
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()

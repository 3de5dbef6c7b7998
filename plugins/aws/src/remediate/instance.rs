//! Stopping and starting an instance, and the state a compensation puts
//! back.

use std::collections::HashMap;

use aws_sdk_ec2::types::Instance;

use super::target::{Done, RUNNING, STOPPED, Target, dry_ran, is_gone, wait_for, why};

/// Where an action leaves an instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Power {
    Running,
    Stopped,
}

/// What `action` asks of an instance. A compensation passes the
/// `previous_state` (or a quarantine's `state_before`) the step it undoes
/// recorded, and that state is put back: undoing a `stop` that found the
/// instance already stopped leaves it stopped.
pub fn wanted(action: &str, props: &HashMap<String, String>) -> Power {
    recorded(props).unwrap_or(if action == "stop" {
        Power::Stopped
    } else {
        Power::Running
    })
}

/// The state a compensation's properties recorded, if they name one.
pub fn recorded(props: &HashMap<String, String>) -> Option<Power> {
    let state = props.get("previous_state").or_else(|| props.get("state_before"));
    match state.map(String::as_str) {
        Some("running" | "pending") => Some(Power::Running),
        Some("stopped" | "stopping") => Some(Power::Stopped),
        _ => None,
    }
}

/// The instance `t` names; an error (with the AWS code) when EC2 has none.
pub async fn describe_instance(t: &Target) -> Result<Instance, String> {
    find_instance(t)
        .await?
        .ok_or_else(|| format!("instance {} not found in {}", t.id, t.region))
}

/// The instance `t` names, `None` when EC2 has none.
pub async fn find_instance(t: &Target) -> Result<Option<Instance>, String> {
    let call = t.ec2().describe_instances().instance_ids(&t.id).send();
    let out = match t.call("ec2", "DescribeInstances", call).await {
        Ok(out) => out,
        Err(e) if is_gone(&e) => return Ok(None),
        Err(e) => return Err(why(&e)),
    };
    Ok(out
        .reservations()
        .iter()
        .flat_map(|r| r.instances())
        .find(|i| i.instance_id() == Some(t.id.as_str()))
        .cloned())
}

/// An instance's state name (`running`, `stopped`, ...).
pub fn state_of(i: &Instance) -> &str {
    i.state().and_then(|s| s.name()).map_or("unknown", |n| n.as_str())
}

/// Brings the instance to `want`: `StopInstances` or `StartInstances`
/// (with `DryRun` for a dry run), then waits for the state. Nothing is
/// sent when it is there (or on its way) already. The snapshot map holds
/// `previous_state` and `instance_id`.
pub async fn power(t: &Target, want: Power, dry_run: bool) -> Result<Done, String> {
    let i = describe_instance(t).await?;
    let before = state_of(&i).to_owned();
    if matches!(before.as_str(), "terminated" | "shutting-down") {
        return Err(format!("instance {} is {before}", t.id));
    }
    let (target, on_its_way) = match want {
        Power::Running => (RUNNING, matches!(before.as_str(), "running" | "pending")),
        Power::Stopped => (STOPPED, matches!(before.as_str(), "stopped" | "stopping")),
    };
    let done = |status: &str| {
        Done::new(status)
            .with("previous_state", Some(&before))
            .with("instance_id", Some(&t.id))
    };
    if on_its_way && !dry_run {
        let reached = settle(t, target).await?;
        return Ok(done(reached));
    }
    if on_its_way {
        return Ok(done(target));
    }
    let ec2 = t.ec2();
    match (want, dry_run) {
        (Power::Stopped, true) => dry_ran(
            t.call(
                "ec2",
                "StopInstances",
                ec2.stop_instances().instance_ids(&t.id).dry_run(true).send(),
            )
            .await,
        )?,
        (Power::Running, true) => dry_ran(
            t.call(
                "ec2",
                "StartInstances",
                ec2.start_instances().instance_ids(&t.id).dry_run(true).send(),
            )
            .await,
        )?,
        (Power::Stopped, false) => {
            t.call("ec2", "StopInstances", ec2.stop_instances().instance_ids(&t.id).send())
                .await
                .map_err(|e| why(&e))?;
        }
        (Power::Running, false) => {
            t.call(
                "ec2",
                "StartInstances",
                ec2.start_instances().instance_ids(&t.id).send(),
            )
            .await
            .map_err(|e| why(&e))?;
        }
    }
    if dry_run {
        return Ok(done(target));
    }
    let reached = settle(t, target).await?;
    Ok(done(reached))
}

/// Waits for the instance to reach `target`; the state it is in when the
/// wait ends (`stopping`, `pending`) otherwise.
async fn settle(t: &Target, target: &'static str) -> Result<&'static str, String> {
    let reached = wait_for(|| async move {
        let i = describe_instance(t).await?;
        Ok((state_of(&i) == target).then_some(target))
    })
    .await?;
    Ok(reached.unwrap_or(match target {
        RUNNING => "pending",
        _ => "stopping",
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compensations_put_back_the_recorded_state() {
        let none = HashMap::new();
        assert_eq!(wanted("stop", &none), Power::Stopped);
        assert_eq!(wanted("start", &none), Power::Running);
        let was = |s: &str| HashMap::from([("previous_state".to_owned(), s.to_owned())]);
        assert_eq!(wanted("start", &was("stopped")), Power::Stopped);
        assert_eq!(wanted("stop", &was("running")), Power::Running);
        assert_eq!(wanted("start", &was("as scanned")), Power::Running);
        let quarantined = HashMap::from([("state_before".to_owned(), "running".to_owned())]);
        assert_eq!(wanted("restore", &quarantined), Power::Running);
        assert_eq!(recorded(&none), None);
    }
}

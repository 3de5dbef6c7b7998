//! Terraform state, format version 4 (Terraform 0.12 and every release
//! since): its managed resource instances with their addresses and
//! attributes. Data sources are read too (their addresses are valid) but
//! declare nothing live.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::address::{IndexKey, ModuleStep, instance_address, parse_module};

/// One resource instance a state declares.
#[derive(Clone, Debug, PartialEq)]
pub struct Declared {
    /// `module.app.aws_ebs_volume.data[2]`.
    pub address: String,
    /// The module path (`module.app`), empty at the root.
    pub module: String,
    /// The module path's steps.
    pub modules: Vec<ModuleStep>,
    /// `managed` or `data`.
    pub mode: String,
    /// The Terraform resource type: `aws_ebs_volume`.
    pub ty: String,
    pub name: String,
    /// The instance's `count` or `for_each` key.
    pub key: Option<IndexKey>,
    /// How the resource repeats, when it does.
    pub each: Option<Each>,
    /// `provider["registry.terraform.io/hashicorp/aws"]`.
    pub provider: String,
    /// The attributes Terraform recorded at its last refresh or apply.
    pub attributes: Map<String, Value>,
}

impl Declared {
    pub fn is_managed(&self) -> bool {
        self.mode == "managed"
    }
}

/// A resource repeated by `count` or by `for_each`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Each {
    Count,
    ForEach,
}

/// What one state holds.
#[derive(Clone, Debug, PartialEq)]
pub struct State {
    pub terraform_version: String,
    pub serial: u64,
    pub lineage: String,
    pub resources: Vec<Declared>,
}

/// Why a state does not read.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("not Terraform state JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("Terraform state format version {0} is not read; svc reads version 4 (Terraform 0.12 and later)")]
    Version(u64),
    #[error("resource {index}: {message}")]
    Resource { index: usize, message: String },
}

#[derive(Deserialize)]
struct Head {
    version: u64,
}

#[derive(Deserialize)]
struct RawState {
    #[serde(default)]
    terraform_version: String,
    #[serde(default)]
    serial: u64,
    #[serde(default)]
    lineage: String,
    #[serde(default)]
    resources: Vec<RawResource>,
}

#[derive(Deserialize)]
struct RawResource {
    #[serde(default)]
    module: String,
    mode: String,
    #[serde(rename = "type")]
    ty: String,
    name: String,
    #[serde(default)]
    provider: String,
    #[serde(default)]
    each: Option<String>,
    #[serde(default)]
    instances: Vec<RawInstance>,
}

#[derive(Deserialize)]
struct RawInstance {
    #[serde(default)]
    index_key: Option<Value>,
    #[serde(default)]
    attributes: Option<Map<String, Value>>,
}

/// Reads a state file's bytes.
pub fn parse(bytes: &[u8]) -> Result<State, StateError> {
    let head: Head = serde_json::from_slice(bytes)?;
    if head.version != 4 {
        return Err(StateError::Version(head.version));
    }
    let raw: RawState = serde_json::from_slice(bytes)?;
    let mut resources = Vec::new();
    for (index, r) in raw.resources.into_iter().enumerate() {
        let fail = |message: String| StateError::Resource { index, message };
        if r.mode != "managed" && r.mode != "data" {
            return Err(fail(format!("mode {:?} is neither managed nor data", r.mode)));
        }
        if r.ty.is_empty() || r.name.is_empty() {
            return Err(fail("a resource has no type or name".to_owned()));
        }
        let modules = parse_module(&r.module).map_err(|e| fail(e.to_string()))?;
        let each = match r.each.as_deref() {
            None => None,
            Some("list") => Some(Each::Count),
            Some("map") => Some(Each::ForEach),
            Some(other) => return Err(fail(format!("each {other:?} is neither list nor map"))),
        };
        for inst in r.instances {
            let key = match inst.index_key {
                None | Some(Value::Null) => None,
                Some(Value::Number(n)) => Some(IndexKey::Int(
                    n.as_i64()
                        .ok_or_else(|| fail(format!("index_key {n} is not an integer")))?,
                )),
                Some(Value::String(s)) => Some(IndexKey::Str(s)),
                Some(other) => return Err(fail(format!("index_key {other} is neither a number nor a string"))),
            };
            resources.push(Declared {
                address: instance_address(&r.module, &r.mode, &r.ty, &r.name, key.as_ref()),
                module: r.module.clone(),
                modules: modules.clone(),
                mode: r.mode.clone(),
                ty: r.ty.clone(),
                name: r.name.clone(),
                key,
                each,
                provider: r.provider.clone(),
                attributes: inst.attributes.unwrap_or_default(),
            });
        }
    }
    Ok(State {
        terraform_version: raw.terraform_version,
        serial: raw.serial,
        lineage: raw.lineage,
        resources,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATE: &str = r#"{
      "version": 4, "terraform_version": "1.9.5", "serial": 7, "lineage": "3f1c",
      "outputs": {},
      "resources": [
        {"mode": "data", "type": "aws_ami", "name": "base",
         "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]",
         "instances": [{"schema_version": 0, "attributes": {"id": "ami-1"}}]},
        {"module": "module.app", "mode": "managed", "type": "aws_ebs_volume", "name": "data",
         "each": "list",
         "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]",
         "instances": [
           {"index_key": 0, "schema_version": 0, "attributes": {"id": "vol-0", "size": 10}},
           {"index_key": 2, "schema_version": 0, "attributes": {"id": "vol-2", "size": 30},
            "sensitive_attributes": [], "dependencies": ["module.app.aws_instance.web"]}
         ]},
        {"mode": "managed", "type": "aws_s3_bucket", "name": "logs", "each": "map",
         "provider": "provider[\"registry.terraform.io/hashicorp/aws\"].eu",
         "instances": [{"index_key": "eu-west-1", "attributes": {"id": "logs-eu"}}]}
      ],
      "check_results": null
    }"#;

    #[test]
    fn reads_instances_with_their_addresses() {
        let s = parse(STATE.as_bytes()).unwrap();
        assert_eq!(
            (s.terraform_version.as_str(), s.serial, s.lineage.as_str()),
            ("1.9.5", 7, "3f1c")
        );
        let addresses: Vec<&str> = s.resources.iter().map(|d| d.address.as_str()).collect();
        assert_eq!(
            addresses,
            [
                "data.aws_ami.base",
                "module.app.aws_ebs_volume.data[0]",
                "module.app.aws_ebs_volume.data[2]",
                r#"aws_s3_bucket.logs["eu-west-1"]"#,
            ]
        );
        let v = &s.resources[2];
        assert!(v.is_managed());
        assert_eq!(v.each, Some(Each::Count));
        assert_eq!(v.modules[0].name, "app");
        assert_eq!(v.attributes["size"], 30);
        assert!(!s.resources[0].is_managed());
        assert_eq!(s.resources[3].each, Some(Each::ForEach));
    }

    #[test]
    fn refuses_what_it_cannot_read_by_name() {
        let v3 = parse(br#"{"version": 3, "modules": []}"#).unwrap_err();
        assert!(v3.to_string().contains("version 3"), "{v3}");
        assert!(matches!(parse(b"{not json"), Err(StateError::Json(_))));
        let bad_mode = parse(br#"{"version": 4, "resources": [{"mode": "x", "type": "t", "name": "n"}]}"#).unwrap_err();
        assert!(bad_mode.to_string().contains("resource 0"), "{bad_mode}");
        let bad_key = parse(
            br#"{"version": 4, "resources": [{"mode": "managed", "type": "t", "name": "n", "instances": [{"index_key": 1.5}]}]}"#,
        )
        .unwrap_err();
        assert!(bad_key.to_string().contains("not an integer"), "{bad_key}");
        let bad_module = parse(
            br#"{"version": 4, "resources": [{"module": "mod.x", "mode": "managed", "type": "t", "name": "n"}]}"#,
        )
        .unwrap_err();
        assert!(bad_module.to_string().contains("mod.x"), "{bad_module}");
    }

    #[test]
    fn an_empty_state_declares_nothing() {
        let s = parse(br#"{"version": 4, "serial": 1, "lineage": "x", "resources": []}"#).unwrap();
        assert!(s.resources.is_empty());
    }
}

//! Response bodies of the infrastructure-as-code routes.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use svc_iac::change::ChangeKind;

use crate::iac::{Loaded, Provenance};

/// `GET /api/v1/drift/report`.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DriftReport {
    /// Whether `iac.terraform_states` names any state.
    pub configured: bool,
    /// Declared resources whose live attributes differ from the state (up to `limit`, in state order).
    pub changed: Vec<ChangedResource>,
    /// Declared resources with no live node (up to `limit`, in state order).
    pub gone: Vec<GoneResource>,
    pub limit: u64,
    /// With `crn`: where the resource is declared and who wrote it.
    pub provenance: Option<ProvenanceAnswer>,
    /// `iac.repository`, when set.
    pub repository: Option<Repository>,
    /// Every configured state, in configured order.
    pub states: Vec<DriftState>,
    pub totals: DriftTotals,
    /// Live resources no state declares (up to `limit`, most expensive first).
    pub unmanaged: Vec<UnmanagedResource>,
}

/// A configured state as last fetched.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DriftState {
    /// Why it could not be fetched or read; the other fields are then empty.
    pub error: Option<String>,
    pub lineage: String,
    /// Managed resource instances of a type svc maps.
    pub resources: u64,
    pub serial: u64,
    /// As configured: a path or an `s3://` URL.
    pub source: String,
    pub terraform_version: String,
}

impl DriftState {
    pub fn new(l: &Loaded, resources: u64) -> DriftState {
        match &l.state {
            Ok(s) => DriftState {
                error: None,
                lineage: s.lineage.clone(),
                resources,
                serial: s.serial,
                source: l.source.clone(),
                terraform_version: s.terraform_version.clone(),
            },
            Err(e) => DriftState {
                error: Some(e.clone()),
                lineage: String::new(),
                resources: 0,
                serial: 0,
                source: l.source.clone(),
                terraform_version: String::new(),
            },
        }
    }
}

/// The repository of `iac.repository`.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = IacRepository)]
pub struct Repository {
    /// Why it cannot be read.
    pub error: Option<String>,
    /// The commit HEAD points at.
    pub head: Option<String>,
    pub path: String,
}

/// How many resources of each kind of drift.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DriftTotals {
    /// Attributes that differ, over every changed resource.
    pub attributes: u64,
    pub changed: u64,
    /// Managed resource instances the readable states declare.
    pub declared: u64,
    pub gone: u64,
    /// Declared and live with every compared attribute as declared.
    pub in_sync: u64,
    /// Declared resources of a type svc maps to its graph.
    pub mapped: u64,
    /// Declared in an account or provider no scan reports: not called gone.
    pub outside_scans: u64,
    pub unmanaged: u64,
    /// Declared resources of a type svc does not map (`null_resource`, Kubernetes objects, ...).
    pub unmapped: u64,
}

/// A declared resource with no live node.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GoneResource {
    /// Its Terraform address: `module.app.aws_ebs_volume.data[2]`.
    pub address: String,
    /// The change that removes it from the configuration.
    pub code_change: CodeChangeBody,
    /// `null` when its attributes do not say and the graph never had it.
    pub crn: Option<String>,
    /// Whether svc's own remediation removed it (the item reached `applied`).
    pub removed_by_svc: bool,
    /// The state that declares it.
    pub state: String,
    pub terraform_type: String,
}

/// A declared resource whose live attributes differ.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangedResource {
    pub address: String,
    pub attributes: Vec<AttributeDriftBody>,
    pub crn: String,
    pub state: String,
    pub terraform_type: String,
}

/// One attribute whose live value is not the declared one.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = AttributeDrift)]
pub struct AttributeDriftBody {
    /// The Terraform attribute: `size`, `tags.owner`.
    pub attribute: String,
    /// The value in the state; `null` when it declares none.
    pub declared: Value,
    /// The live value; `null` when the resource has none.
    pub live: Value,
    /// The graph property compared: `size_gib`, `tags.owner`.
    pub property: String,
}

impl From<&svc_iac::drift::AttributeDrift> for AttributeDriftBody {
    fn from(a: &svc_iac::drift::AttributeDrift) -> AttributeDriftBody {
        AttributeDriftBody {
            attribute: a.attribute.clone(),
            declared: a.declared.clone(),
            live: a.live.clone(),
            property: a.property.clone(),
        }
    }
}

/// A live resource no state declares.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UnmanagedResource {
    pub cost_usd_mo: f64,
    pub crn: String,
    /// The Terraform type that would declare it.
    pub terraform_type: String,
    /// The graph type: `ec2:volume`.
    #[serde(rename = "type")]
    pub ty: String,
}

/// The code change that goes with a remediation of a managed resource.
#[derive(Serialize, ToSchema, Debug)]
#[serde(deny_unknown_fields)]
#[schema(as = CodeChange)]
pub struct CodeChangeBody {
    /// A unified diff deleting the block, when the whole block goes and it was found.
    pub diff: Option<String>,
    pub kind: CodeChangeKind,
    /// A `removed` block (Terraform 1.7 and later) that makes Terraform forget the resource without destroying it.
    pub removed_block: Option<String>,
    pub summary: String,
}

impl From<svc_iac::change::CodeChange> for CodeChangeBody {
    fn from(c: svc_iac::change::CodeChange) -> CodeChangeBody {
        CodeChangeBody {
            diff: c.diff,
            kind: match c.kind {
                ChangeKind::RemoveBlock => CodeChangeKind::RemoveBlock,
                ChangeKind::RemoveKey => CodeChangeKind::RemoveForEachKey,
                ChangeKind::ReduceCount => CodeChangeKind::ReduceCount,
                ChangeKind::UpdateBlock => CodeChangeKind::UpdateBlock,
                ChangeKind::None => CodeChangeKind::None,
            },
            removed_block: c.removed_block,
            summary: c.summary,
        }
    }
}

/// What to change in the code.
#[derive(Serialize, ToSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CodeChangeKind {
    /// Delete the resource's block, or replace it with the `removed` block.
    RemoveBlock,
    /// Drop the instance's key from the `for_each` collection.
    RemoveForEachKey,
    /// One instance of a `count` resource: lower `count`, or move to `for_each`.
    ReduceCount,
    /// Set the new value in the block.
    UpdateBlock,
    /// Nothing the state records changes.
    None,
}

/// `GET /api/v1/provenance`.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProvenanceAnswer {
    /// Its Terraform address; empty when unmanaged.
    pub address: String,
    /// The author's name.
    pub author: String,
    pub commit: String,
    pub crn: String,
    pub email: String,
    /// The block's last line.
    pub end_line: u32,
    /// Repository-relative path of the `.tf` file.
    pub file: String,
    /// The line of the block's `resource` keyword; 0 when unknown.
    pub line: u32,
    /// Whether a configured state declares it.
    pub managed: bool,
    /// Why the declaration or its blame is missing, when it is.
    pub missing: Option<String>,
    /// The state that declares it.
    pub state: String,
    /// The commit's first line.
    pub summary: String,
    /// The commit's author time, Unix seconds; 0 when unknown.
    pub time: i64,
}

impl ProvenanceAnswer {
    pub fn managed(crn: &str, p: Provenance) -> ProvenanceAnswer {
        ProvenanceAnswer {
            address: p.address,
            author: p.author,
            commit: p.commit,
            crn: crn.to_owned(),
            email: p.email,
            end_line: p.end_line,
            file: p.file,
            line: p.line,
            managed: true,
            missing: p.missing,
            state: p.state,
            summary: p.summary,
            time: p.time,
        }
    }

    pub fn unmanaged(crn: &str) -> ProvenanceAnswer {
        ProvenanceAnswer {
            crn: crn.to_owned(),
            ..ProvenanceAnswer::managed(crn, Provenance::default())
        }
        .not_managed()
    }

    fn not_managed(mut self) -> ProvenanceAnswer {
        self.managed = false;
        self
    }
}

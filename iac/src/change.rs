//! The code change that goes with a remediation of a managed resource, so
//! that approving it does not leave drift behind: after svc deletes a
//! resource, a configuration that still declares it would have the next
//! `terraform apply` create it again.

use std::fmt::Write;

use crate::address::resource_address;
use crate::code::Block;
use crate::state::{Declared, Each};

/// What to change in the code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    /// Delete the resource's block (or replace it with a `removed` block).
    RemoveBlock,
    /// Drop this instance's key from the `for_each` collection.
    RemoveKey,
    /// Lower `count`, or move the resource to `for_each` and drop the key:
    /// `count` always drops its highest indexes.
    ReduceCount,
    /// Set the new value in the block.
    UpdateBlock,
    /// The change touches nothing the state records.
    None,
}

/// The change, in words and as text to apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeChange {
    pub kind: ChangeKind,
    /// What to do, in a sentence or two.
    pub summary: String,
    /// A unified diff deleting the block, when the whole block goes and it
    /// was found.
    pub diff: Option<String>,
    /// A `removed` block (Terraform 1.7 and later) to put where the block
    /// was: Terraform forgets the resource without destroying anything.
    pub removed_block: Option<String>,
}

/// Whether a remediation intent removes the resource.
pub fn removes(intent: &str) -> bool {
    matches!(intent, "delete" | "snapshot_delete" | "release")
}

/// The code change for remediation `intent` of a declared resource, whose
/// block is `block` when it was found in the repository.
pub fn for_intent(declared: &Declared, intent: &str, block: Option<&Block>) -> CodeChange {
    let at = block.map_or_else(String::new, |b| format!(" ({}:{}-{})", b.file, b.line, b.end_line));
    let head = format!(
        "{} \"{}\" \"{}\"",
        block_keyword(&declared.mode),
        declared.ty,
        declared.name
    );
    if !removes(intent) {
        return match intent {
            "resize" => CodeChange {
                kind: ChangeKind::UpdateBlock,
                summary: format!(
                    "Set the new size in the `{head}` block{at}; otherwise the next `terraform apply` sets the old one back."
                ),
                diff: None,
                removed_block: None,
            },
            _ => CodeChange {
                kind: ChangeKind::None,
                summary: format!(
                    "The {intent} changes no argument of {}: the code needs no change.",
                    declared.address
                ),
                diff: None,
                removed_block: None,
            },
        };
    }
    match (&declared.key, declared.each) {
        (Some(key), Some(Each::ForEach)) => CodeChange {
            kind: ChangeKind::RemoveKey,
            summary: format!(
                "Remove the key {key} from the `for_each` of the `{head}` block{at}: {} is one instance of it, and the other instances stay.",
                declared.address
            ),
            diff: None,
            removed_block: None,
        },
        (Some(key), _) => CodeChange {
            kind: ChangeKind::ReduceCount,
            summary: format!(
                "{} is instance {key} of the `{head}` block{at}, which has `count`: lowering `count` removes the highest indexes, not necessarily this one. Move the resource to `for_each` (with `moved` blocks) and drop this instance's key, or lower `count` if it is the last.",
                declared.address
            ),
            diff: None,
            removed_block: None,
        },
        (None, _) => {
            let from = resource_address("", &declared.mode, &declared.ty, &declared.name);
            let removed = format!("removed {{\n  from = {from}\n\n  lifecycle {{\n    destroy = false\n  }}\n}}\n");
            let place = if declared.module.is_empty() {
                "in the root module".to_owned()
            } else {
                format!("in {}", declared.module)
            };
            CodeChange {
                kind: ChangeKind::RemoveBlock,
                summary: format!(
                    "Delete the `{head}` block{at} {place}, so the next `terraform apply` does not create {} again; or replace it with the `removed` block, which makes Terraform forget it without destroying anything.",
                    declared.address
                ),
                diff: block.map(deletion_diff),
                removed_block: Some(removed),
            }
        }
    }
}

fn block_keyword(mode: &str) -> &'static str {
    if mode == "data" { "data" } else { "resource" }
}

/// A unified diff deleting the block's lines.
fn deletion_diff(b: &Block) -> String {
    let lines: Vec<&str> = b.text.lines().collect();
    let mut out = format!("--- a/{0}\n+++ b/{0}\n", b.file);
    let _ = writeln!(out, "@@ -{},{} +{},0 @@", b.line, lines.len(), b.line.saturating_sub(1));
    for l in lines {
        let _ = writeln!(out, "-{l}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state;

    fn declared(module: &str, key: Option<serde_json::Value>, each: Option<&str>) -> Declared {
        let mut r = serde_json::json!({"mode": "managed", "type": "aws_ebs_volume", "name": "data",
            "module": module, "instances": [{"attributes": {"id": "vol-1"}}]});
        if let Some(k) = key {
            r["instances"][0]["index_key"] = k;
        }
        if let Some(e) = each {
            r["each"] = e.into();
        }
        let text = serde_json::json!({"version": 4, "resources": [r]}).to_string();
        state::parse(text.as_bytes()).unwrap().resources.remove(0)
    }

    fn block() -> Block {
        Block {
            file: "modules/app/main.tf".into(),
            line: 12,
            end_line: 15,
            text: "resource \"aws_ebs_volume\" \"data\" {\n  size = 100\n  type = \"gp3\"\n}".into(),
        }
    }

    #[test]
    fn a_single_resource_loses_its_block() {
        let d = declared("module.app", None, None);
        let c = for_intent(&d, "delete", Some(&block()));
        assert_eq!(c.kind, ChangeKind::RemoveBlock);
        assert!(
            c.summary.contains("(modules/app/main.tf:12-15) in module.app"),
            "{}",
            c.summary
        );
        assert_eq!(
            c.diff.as_deref(),
            Some(
                "--- a/modules/app/main.tf\n+++ b/modules/app/main.tf\n@@ -12,4 +11,0 @@\n\
                 -resource \"aws_ebs_volume\" \"data\" {\n-  size = 100\n-  type = \"gp3\"\n-}\n"
            )
        );
        assert_eq!(
            c.removed_block.as_deref(),
            Some("removed {\n  from = aws_ebs_volume.data\n\n  lifecycle {\n    destroy = false\n  }\n}\n")
        );
        let unfound = for_intent(&d, "delete", None);
        assert_eq!(unfound.diff, None);
        assert!(unfound.removed_block.is_some());
    }

    #[test]
    fn an_instance_loses_its_key_not_the_block() {
        let each = for_intent(&declared("", Some("eu".into()), Some("map")), "delete", Some(&block()));
        assert_eq!(each.kind, ChangeKind::RemoveKey);
        assert!(each.summary.contains("[\"eu\"]"), "{}", each.summary);
        assert_eq!((each.diff, each.removed_block), (None, None));
        let count = for_intent(&declared("", Some(2.into()), Some("list")), "delete", None);
        assert_eq!(count.kind, ChangeKind::ReduceCount);
        assert!(count.summary.contains("aws_ebs_volume.data[2]"), "{}", count.summary);
    }

    #[test]
    fn a_stop_needs_no_change_and_a_resize_a_new_value() {
        let d = declared("", None, None);
        assert_eq!(for_intent(&d, "stop", None).kind, ChangeKind::None);
        assert_eq!(for_intent(&d, "resize", Some(&block())).kind, ChangeKind::UpdateBlock);
    }
}

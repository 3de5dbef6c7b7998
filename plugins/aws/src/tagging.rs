//! Tags of the resources whose own list calls carry none (functions, log
//! groups, buckets, tables, cache clusters): one paginated Resource Groups
//! Tagging API `GetResources` per region, instead of one tag call per
//! resource. It returns every resource of the region that is (or was)
//! tagged, buckets included (a bucket is returned by the region it lives
//! in); a resource it does not name has no tags.
//!
//! A region whose tags cannot be read fails like any other call: its
//! resources would otherwise be reported without `svc:ignore`, and the
//! rules would take up resources an operator asked them to leave alone.

use std::collections::HashMap;

use crate::calls::{CallError, Calls, Op, pages};

/// Resources per `GetResources` page (the API's maximum).
const PAGE: i32 = 100;

/// The services whose resources are asked for: those whose list calls
/// leave tags out (EC2, ELBv2, RDS and EKS answers carry their own).
const SERVICES: [&str; 5] = ["lambda", "logs", "s3", "dynamodb", "elasticache"];

/// A region's tags, by resource ARN.
#[derive(Default)]
pub struct Tags {
    by_arn: HashMap<String, Vec<(String, String)>>,
}

/// A log group's ARN may end in `:*` (every stream); the group's own does not.
fn key(arn: &str) -> &str {
    arn.strip_suffix(":*").unwrap_or(arn)
}

impl Tags {
    /// The tags (key, value) of the resource with ARN `arn`; none when the
    /// ARN is unknown.
    pub fn of(&self, arn: Option<&str>) -> impl Iterator<Item = (&str, &str)> {
        arn.and_then(|a| self.by_arn.get(key(a)))
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Records the tags of `arn`.
    pub fn insert(&mut self, arn: &str, tags: Vec<(String, String)>) {
        self.by_arn.insert(key(arn).to_owned(), tags);
    }
}

/// Every tagged resource of [`SERVICES`] in `region`.
pub async fn list(calls: &Calls, region: &str) -> Result<Tags, CallError> {
    let c = calls.tagging(region);
    let op = Op {
        service: "tag",
        operation: "GetResources",
        region,
    };
    let mut call = c.get_resources().resources_per_page(PAGE);
    for s in SERVICES {
        call = call.resource_type_filters(s);
    }
    let stream = call.into_paginator().send();
    let pages = pages!(calls, op, stream, |o| o.resource_tag_mapping_list().len())?;
    let mut tags = Tags::default();
    for m in pages
        .into_iter()
        .flat_map(|o| o.resource_tag_mapping_list.unwrap_or_default())
    {
        let Some(arn) = m.resource_arn() else { continue };
        let pairs = m.tags().iter().map(|t| (t.key().to_owned(), t.value().to_owned()));
        tags.insert(arn, pairs.collect());
    }
    Ok(tags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_up_by_arn_with_or_without_the_stream_suffix() {
        let mut t = Tags::default();
        t.insert(
            "arn:aws:logs:us-east-1:1:log-group:/app:*",
            vec![("svc:ignore".into(), "true".into())],
        );
        t.insert("arn:aws:s3:::b", vec![("env".into(), "prod".into())]);
        let of = |arn| t.of(Some(arn)).collect::<Vec<_>>();
        assert_eq!(of("arn:aws:logs:us-east-1:1:log-group:/app"), [("svc:ignore", "true")]);
        assert_eq!(
            of("arn:aws:logs:us-east-1:1:log-group:/app:*"),
            [("svc:ignore", "true")]
        );
        assert_eq!(of("arn:aws:s3:::b"), [("env", "prod")]);
        assert!(of("arn:aws:s3:::other").is_empty());
        assert_eq!(t.of(None).count(), 0);
    }
}

//! S3 buckets, listed once per scan (S3 is global): `ListBuckets`, and a
//! bucket's region from the listing (`BucketRegion`) or, where AWS leaves
//! it out, from `GetBucketLocation`. Each bucket is reported with the
//! region it lives in, as the mock estate's `s3:bucket` nodes.

use aws_sdk_s3::types::BucketLocationConstraint;

use crate::calls::{CallError, Calls, Op, pages};
use crate::emit::{Out, secs};
use crate::tagging::Tags;

/// Page size of `ListBuckets` (the API's maximum is 10000).
const PAGE: i32 = 1000;

/// One bucket and the region it lives in.
#[derive(Clone, Debug)]
pub struct Bucket {
    pub name: String,
    pub region: String,
    pub created: Option<i64>,
}

/// The region a `LocationConstraint` names: none means us-east-1, `EU`
/// the old name of eu-west-1.
pub fn location_region(constraint: Option<&BucketLocationConstraint>) -> String {
    match constraint.map(|c| c.as_str()) {
        None | Some("") => "us-east-1".to_owned(),
        Some("EU") => "eu-west-1".to_owned(),
        Some(r) => r.to_owned(),
    }
}

/// Lists every bucket of the account through `home` (the region its
/// requests go to) with the region of each.
pub async fn list(calls: &Calls, home: &str) -> Result<Vec<Bucket>, CallError> {
    let c = calls.s3(home);
    let op = |operation| Op {
        service: "s3",
        operation,
        region: home,
    };
    let stream = c.list_buckets().max_buckets(PAGE).into_paginator().send();
    let pages = pages!(calls, op("ListBuckets"), stream, |o| o.buckets().len())?;
    let listed: Vec<_> = pages.into_iter().flat_map(|o| o.buckets.unwrap_or_default()).collect();
    let located = listed.into_iter().filter_map(|b| {
        let name = b.name?;
        let created = secs(b.creation_date.as_ref());
        let known = b.bucket_region.filter(|r| !r.is_empty());
        let c = &c;
        Some(async move {
            let region = match known {
                Some(r) => r,
                None => {
                    let call = c.get_bucket_location().bucket(&name).send();
                    let o = calls.one(op("GetBucketLocation"), 1, call, |_| Some(1)).await?;
                    location_region(o.location_constraint())
                }
            };
            Ok::<_, CallError>(Bucket { name, region, created })
        })
    });
    futures::future::try_join_all(located).await
}

/// Writes the buckets that live in `out`'s region, with the tags that
/// region's tagging API gave them.
pub fn nodes(out: &mut Out<'_>, buckets: &[Bucket], tags: &Tags) {
    let region = out.region;
    for b in buckets.iter().filter(|b| b.region == region) {
        // Buckets have no lifecycle state; the mock estate calls them active.
        let mut doc = out.doc("active", b.created);
        let arn = format!("arn:{}:s3:::{}", out.partition, b.name);
        doc.str("arn", Some(&arn));
        out.tagged("bucket", &b.name, doc, tags.of(Some(&arn)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_location_constraint() {
        assert_eq!(location_region(None), "us-east-1");
        assert_eq!(location_region(Some(&BucketLocationConstraint::from(""))), "us-east-1");
        assert_eq!(location_region(Some(&BucketLocationConstraint::Eu)), "eu-west-1");
        assert_eq!(location_region(Some(&BucketLocationConstraint::ApSouth1)), "ap-south-1");
    }
}

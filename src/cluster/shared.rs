//! The cluster's shared object storage (`[cluster] shared_store`): where
//! the leader puts each shipped `graph.redb` transaction for the standbys
//! to fetch. `file:///dir` (a directory every node mounts) or
//! `s3://bucket/prefix` (opened as the compliance export opens its
//! buckets: `svc_api::export::s3_bucket`).

use std::sync::Arc;

use anyhow::{Context, bail};
use futures::TryStreamExt;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

/// A bucket or directory, and the prefix under it.
#[derive(Clone)]
pub struct SharedStore {
    store: Arc<dyn ObjectStore>,
    prefix: String,
    url: String,
}

impl SharedStore {
    /// The store `url` names: `file:///absolute/dir` or `s3://bucket[/prefix]`.
    pub fn open(url: &str) -> anyhow::Result<SharedStore> {
        if let Some(dir) = url.strip_prefix("file://") {
            if !dir.starts_with('/') {
                bail!(
                    "cluster.shared_store {url:?}: a file:// URL names an absolute directory, e.g. file:///srv/svc-shared"
                );
            }
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create the shared store's directory {dir}"))?;
            let store = LocalFileSystem::new_with_prefix(dir)
                .with_context(|| format!("cannot use {dir} as the cluster's shared store"))?;
            return Ok(SharedStore {
                store: Arc::new(store),
                prefix: String::new(),
                url: url.to_owned(),
            });
        }
        if let Some(rest) = url.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                bail!("cluster.shared_store {url:?}: name the bucket, e.g. s3://svc-cluster/prod");
            }
            let store = svc_api::export::s3_bucket(bucket)
                .with_context(|| format!("cannot use {url} as the cluster's shared store"))?;
            return Ok(SharedStore {
                store: Arc::new(store),
                prefix: prefix.trim_matches('/').to_owned(),
                url: url.to_owned(),
            });
        }
        bail!("cluster.shared_store {url:?}: give a file:///dir or s3://bucket/prefix URL")
    }

    fn path(&self, name: &str) -> Path {
        if self.prefix.is_empty() {
            Path::from(name)
        } else {
            Path::from(format!("{}/{name}", self.prefix))
        }
    }

    pub async fn put(&self, name: &str, bytes: Vec<u8>) -> anyhow::Result<()> {
        self.store
            .put(&self.path(name), PutPayload::from(bytes))
            .await
            .with_context(|| format!("cannot write {name} to {}", self.url))?;
        Ok(())
    }

    pub async fn get(&self, name: &str) -> anyhow::Result<Vec<u8>> {
        let got = self
            .store
            .get(&self.path(name))
            .await
            .with_context(|| format!("cannot read {name} from {}", self.url))?;
        let bytes = got
            .bytes()
            .await
            .with_context(|| format!("cannot read {name} from {}", self.url))?;
        Ok(bytes.to_vec())
    }

    /// The names under `dir` (relative to the store's prefix).
    pub async fn list(&self, dir: &str) -> anyhow::Result<Vec<String>> {
        let listed: Vec<_> = self
            .store
            .list(Some(&self.path(dir)))
            .try_collect()
            .await
            .with_context(|| format!("cannot list {dir} in {}", self.url))?;
        let skip = if self.prefix.is_empty() {
            0
        } else {
            self.prefix.len() + 1
        };
        Ok(listed
            .into_iter()
            .map(|m| m.location.as_ref().get(skip..).unwrap_or_default().to_owned())
            .collect())
    }

    pub async fn delete(&self, name: &str) -> anyhow::Result<()> {
        self.store
            .delete(&self.path(name))
            .await
            .with_context(|| format!("cannot delete {name} from {}", self.url))
    }
}

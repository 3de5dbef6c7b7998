//! The API tokens a cluster shares: its named tokens (all but each node's
//! `admin`, which is its token file's) as one value under
//! `<prefix>/tokens/set` in etcd. The leader hands every change to etcd,
//! fenced by its leadership, before it keeps it; every node follows the key
//! into its own token store, so a token made on one leader works on the
//! next, and one revoked is refused everywhere.

use std::sync::Arc;

use anyhow::Context;
use svc_api::AppState;
use svc_api::auth::tokens::{self, Publisher};
use svc_cluster::{Etcd, Leadership, Mirror, ops};
use tracing::{info, warn};

/// The etcd directory of the shared tokens, below a cluster's prefix.
fn dir(prefix: &str) -> String {
    format!("{}/tokens/", prefix.trim_end_matches('/'))
}

/// The key holding the shared set.
fn key(prefix: &str) -> Vec<u8> {
    format!("{}set", dir(prefix)).into_bytes()
}

/// Follows the cluster's token set into `state`'s token store while the
/// task runs (for the node's whole life, leading or not).
pub async fn follow(etcd: Etcd, prefix: String, state: AppState) {
    let mirror = Mirror::start(&etcd, dir(&prefix).as_bytes());
    let mut set = mirror.subscribe();
    let key = key(&prefix);
    loop {
        let value = set.borrow_and_update().get(&key).map(|kv| kv.value.clone());
        // No set yet: the first leader publishes its own at take-over.
        if let Some(bytes) = value {
            adopt(&state, &bytes).await;
        }
        if set.changed().await.is_err() {
            return;
        }
    }
}

/// Takes `bytes` (the shared set) as this node's named tokens and ends the
/// dashboard sessions of those it removed. A set that does not parse is
/// logged and leaves the store as it is.
async fn adopt(state: &AppState, bytes: &[u8]) {
    let entries = match tokens::decode(bytes) {
        Ok(entries) => entries,
        Err(e) => {
            warn!(error = %e, "the cluster's token set in etcd does not parse; this node keeps its tokens");
            return;
        }
    };
    let st = state.clone();
    let adopted = tokio::task::spawn_blocking(move || {
        let auth = &st.inner.auth;
        let removed = auth.tokens.adopt(entries)?;
        for name in &removed {
            auth.sessions.close_all_of(name);
        }
        Ok::<_, tokens::TokenError>(removed)
    })
    .await;
    match adopted {
        Ok(Ok(removed)) if !removed.is_empty() => info!(?removed, "tokens revoked in the cluster are refused here"),
        Ok(Ok(_)) => {}
        Ok(Err(e)) => warn!(error = %e, "cannot take the cluster's token set"),
        Err(e) => warn!(error = %e, "taking the cluster's token set was cancelled"),
    }
}

/// Makes the cluster's set and this node's agree as it takes the lead: the
/// cluster's wins when there is one; otherwise this node's named tokens
/// become it (a cluster formed around a daemon that had tokens).
pub async fn take_over(etcd: &Etcd, prefix: &str, leadership: &Leadership, state: &AppState) -> anyhow::Result<()> {
    let key = key(prefix);
    match etcd
        .get(key.clone())
        .await
        .context("cannot read the cluster's tokens")?
    {
        Some(kv) => adopt(state, &kv.value).await,
        None => {
            let named = state.inner.auth.tokens.named();
            if !named.is_empty() {
                put(etcd, &key, leadership, &named).await?;
                info!(tokens = named.len(), "this node's tokens are now the cluster's");
            }
        }
    }
    Ok(())
}

/// Puts `named` as the shared set, only while `leadership` holds.
async fn put(etcd: &Etcd, key: &[u8], leadership: &Leadership, named: &[tokens::Entry]) -> anyhow::Result<()> {
    let bytes = tokens::encode(named).context("cannot encode the tokens")?;
    let txn = ops::txn(vec![leadership.fence()], vec![ops::put(key, bytes, 0)], Vec::new());
    let answer = etcd.txn(txn).await.context("cannot write the cluster's tokens")?;
    anyhow::ensure!(answer.succeeded, "this node no longer leads the cluster");
    Ok(())
}

/// The leader's publisher: each change goes to etcd, fenced by
/// `leadership`, before the store keeps it. Called from blocking threads.
pub fn publisher(etcd: Etcd, prefix: &str, leadership: Arc<Leadership>, runtime: tokio::runtime::Handle) -> Publisher {
    let key = key(prefix);
    Arc::new(move |named: &[tokens::Entry]| {
        runtime
            .block_on(put(&etcd, &key, &leadership, named))
            .map_err(|e| format!("{e:#}"))
    })
}

/// What a node that does not lead answers a token change with.
pub fn refuse() -> Publisher {
    Arc::new(|_: &[tokens::Entry]| Err("this node does not lead the cluster".to_owned()))
}

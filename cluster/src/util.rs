//! Small shared helpers.

use tokio::task::JoinHandle;

/// A spawned task that is aborted when its owner is dropped.
pub(crate) struct AbortOnDrop(pub(crate) JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

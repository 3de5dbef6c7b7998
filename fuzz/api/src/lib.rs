//! What the fuzz targets use of `svc-api`, compiled from `svc-api`'s own
//! files as they are: for the daemon's configuration sources
//! (`src/config.rs`, `src/settings.rs`, target `config_toml`) the
//! configuration service's error and trait, the export settings with the
//! bucket parser, and the notification settings; for `graph_fbs`, the
//! binary graph form (`fbs`). The targets get it under the name `svc_api`,
//! without the rest of that crate (the HTTP server, the object store
//! clients), which only slows the fuzz build.

#[path = "../../../api/src/config.rs"]
pub mod config;

#[path = "../../../api/src/export/settings.rs"]
mod export_settings;

pub mod export {
    pub use crate::export_settings::*;
}

#[path = "../../../api/src/notify/settings.rs"]
mod notify_settings;

pub mod notify {
    pub use crate::notify_settings::*;
    pub mod settings {
        pub use crate::notify_settings::*;
    }
}

#[path = "../../../api/src/fbs/mod.rs"]
pub mod fbs;

/// The assistant's tool catalogue, the MCP dispatcher and the models'
/// stream reader (targets `mcp_messages`, `model_stream`), at the root as
/// their files name each other through `super::`; `run` is the one type the
/// dispatcher names of the executor, which needs the router.
#[path = "../../../api/src/assistant/tools.rs"]
pub mod tools;

#[path = "../../../api/src/assistant/mcp.rs"]
pub mod mcp;

#[path = "../../../api/src/assistant/model.rs"]
pub mod model;

pub mod run {
    /// One tool call's outcome, as `svc-api`'s executor gives it.
    #[derive(Clone, Debug, PartialEq)]
    pub struct Outcome {
        pub ok: bool,
        pub value: serde_json::Value,
    }

    impl Outcome {
        pub fn failed(message: impl Into<String>) -> Outcome {
            Outcome {
                ok: false,
                value: serde_json::json!({ "error": message.into() }),
            }
        }
    }
}

pub mod assistant {
    pub use crate::{mcp, model, run, tools};
}

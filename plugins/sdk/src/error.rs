//! The errors that keep a plugin from starting or stop it.

/// Why a plugin did not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum SdkError {
    #[error("not started by the svc daemon: {key} is not {value:?}")]
    NotStartedByDaemon { key: &'static str, value: &'static str },
    #[error("unsupported plugin protocol versions {offered:?}: this plugin speaks version 1")]
    UnsupportedProtocol { offered: String },
    #[error("invalid {name} {value:?}: expected a port number")]
    InvalidEnv { name: &'static str, value: String },
    #[error("no free port in {min}..={max}")]
    NoFreePort { min: u16, max: u16 },
    #[error("listen: {0}")]
    Io(#[from] std::io::Error),
    #[error("serve: {0}")]
    Transport(#[from] tonic::transport::Error),
}

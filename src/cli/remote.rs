//! Where the daemon is and how to authenticate: the flags every verb that
//! talks to a running daemon shares.

/// Where the daemon is and how to authenticate.
#[derive(clap::Args, Debug, Clone)]
pub struct Remote {
    /// Address of the daemon.
    #[arg(long, env = "SVC_URL", default_value = "http://127.0.0.1:8080")]
    pub url: String,
    /// API token; defaults to the admin token in `$SVC_DATA_DIR/token`.
    #[arg(long, env = "SVC_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Print the raw JSON answer.
    #[arg(long)]
    pub json: bool,
}

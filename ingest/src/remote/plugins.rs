//! A worker's plugin processes: one per source a daemon names in its
//! calls ([`SOURCE_HEADER`], [`PLUGIN_HEADER`]), launched with the plugin
//! host's own code (integrity check against the manifest, handshake,
//! health) on the source's first call, and again after it exited, its
//! binary was installed again, or the source names another plugin.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use tonic::codegen::http::HeaderMap;
use tonic::transport::Channel;
use tonic::{Request, Status};

use super::{PLUGIN_HEADER, SOURCE_HEADER, valid_plugin_name, valid_source_name};
use crate::host::discover::{Integrity, PLUGIN_PREFIX, discover};
use crate::host::launch::{LaunchOptions, PluginProcess, drop_if_stale};
use crate::host::manifest::Role;
use crate::host::{HostError, status_text};

/// What a worker is and where its plugins are.
#[derive(Clone, Debug)]
pub struct WorkerOptions {
    /// Its id, in its answers and errors.
    pub id: String,
    /// Where `svc-plugin-<name>` binaries and their manifests are.
    pub plugin_dir: PathBuf,
    /// How plugins are launched (each launch adds its integrity check).
    pub launch: LaunchOptions,
}

/// The worker's plugin processes, one per source, and their binaries'
/// integrity checks.
pub(super) struct PluginTable {
    pub(super) opts: WorkerOptions,
    /// One plugin process per source, by source name.
    slots: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Slot>>>>,
    /// Each plugin binary's integrity check, kept across launches.
    integrity: Mutex<HashMap<String, Arc<Integrity>>>,
}

/// The plugin process that runs one source.
#[derive(Default)]
pub(super) struct Slot {
    pub(super) plugin: String,
    pub(super) process: Option<PluginProcess>,
}

/// The source and plugin a call names.
#[derive(Clone, Debug)]
pub(super) struct Route {
    pub(super) source: String,
    pub(super) plugin: String,
}

impl Route {
    pub(super) fn of(headers: &HeaderMap) -> Result<Route, Status> {
        let get = |key: &str| -> Result<String, Status> {
            let value = headers
                .get(key)
                .ok_or_else(|| Status::invalid_argument(format!("the call names no {key} (request metadata)")))?;
            value
                .to_str()
                .map(str::to_owned)
                .map_err(|_| Status::invalid_argument(format!("{key} is not ASCII text")))
        };
        let (source, plugin) = (get(SOURCE_HEADER)?, get(PLUGIN_HEADER)?);
        if !valid_source_name(&source) {
            return Err(Status::invalid_argument(format!(
                "invalid {SOURCE_HEADER} {source:?}: 1 to 128 letters, digits, '-', '_', '.', ':'"
            )));
        }
        if !valid_plugin_name(&plugin) {
            return Err(Status::invalid_argument(format!(
                "invalid {PLUGIN_HEADER} {plugin:?}: letters, digits, '-' and '_'"
            )));
        }
        Ok(Route { source, plugin })
    }
}

/// A plugin host error as the status a worker answers with.
fn host_status(worker: &str, route: &Route, e: &HostError) -> Status {
    let message = format!("worker {worker}, source {}: {e}", route.source);
    match e {
        HostError::Rpc { .. } | HostError::Connect { .. } => Status::unavailable(message),
        _ => Status::failed_precondition(message),
    }
}

impl PluginTable {
    pub(super) fn new(opts: WorkerOptions) -> PluginTable {
        PluginTable {
            opts,
            slots: Mutex::new(HashMap::new()),
            integrity: Mutex::new(HashMap::new()),
        }
    }

    fn launch_options(&self, plugin: &str) -> LaunchOptions {
        let integrity = self
            .integrity
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(plugin.to_owned())
            .or_default()
            .clone();
        LaunchOptions {
            integrity: Some(integrity),
            ..self.opts.launch.clone()
        }
    }

    /// The slot of `route`'s source and a channel to its running plugin,
    /// launched (or launched again: it exited, its binary was installed
    /// again, or the source now names another plugin) when needed.
    pub(super) async fn channel(
        &self,
        route: &Route,
    ) -> Result<(Arc<tokio::sync::Mutex<Slot>>, Channel, Option<u32>), Status> {
        let worker = &self.opts.id;
        let slot = self
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(route.source.clone())
            .or_default()
            .clone();
        let mut held = slot.lock().await;
        if held.plugin != route.plugin {
            if let Some(p) = held.process.take() {
                p.shutdown().await;
            }
            held.plugin = route.plugin.clone();
        }
        let opts = self.launch_options(&route.plugin);
        drop_if_stale(&mut held.process, &opts)
            .await
            .map_err(|e| host_status(worker, route, &e))?;
        if held.process.is_none() {
            let path = self.opts.plugin_dir.join(format!("{PLUGIN_PREFIX}{}", route.plugin));
            if !path.is_file() {
                return Err(Status::failed_precondition(format!(
                    "worker {worker} has no plugin {}: no {} (install it with `svc plugins install-local`)",
                    route.plugin,
                    path.display()
                )));
            }
            let process = PluginProcess::launch(&path, Role::Provider, &opts)
                .await
                .map_err(|e| host_status(worker, route, &e))?;
            tracing::info!(source = %route.source, plugin = %route.plugin, pid = process.id(),
                "plugin started for a source");
            held.process = Some(process);
        }
        let (channel, pid) = match held.process.as_ref() {
            Some(p) => (p.channel(), p.id()),
            None => return Err(Status::internal("the plugin process went away")),
        };
        drop(held);
        Ok((slot, channel, pid))
    }

    /// Routes a unary call: the request's source, and its plugin's channel.
    pub(super) async fn unary<T>(&self, request: &Request<T>) -> Result<(Route, Channel), Status> {
        let route = Route::of(request.metadata().as_ref())?;
        let (_, channel, _) = self.channel(&route).await?;
        Ok((route, channel))
    }

    /// The status of a relayed call that failed: the plugin's own, with
    /// the worker and source named.
    pub(super) fn relayed_error(&self, route: &Route, status: Status) -> Status {
        Status::new(
            status.code(),
            format!(
                "worker {}, source {} (plugin {}): {}",
                self.opts.id,
                route.source,
                route.plugin,
                status_text(&status)
            ),
        )
    }

    /// The provider plugins in the plugin directory, by name (what this
    /// worker can run).
    pub fn plugins(&self) -> Vec<String> {
        discover(&self.opts.plugin_dir)
            .into_iter()
            .filter(|d| d.manifest.as_ref().is_ok_and(|m| m.role == Role::Provider))
            .map(|d| d.name)
            .collect()
    }

    /// The process id of the plugin that runs `source`, while one runs.
    pub async fn plugin_pid(&self, source: &str) -> Option<u32> {
        let slot = self
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(source)
            .cloned()?;
        let mut held = slot.lock().await;
        let process = held.process.as_mut()?;
        if process.exit_status().is_some() {
            return None;
        }
        process.id()
    }

    /// Stops every plugin process.
    pub async fn shutdown(&self) {
        let slots: Vec<_> = self
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, s)| s)
            .collect();
        for slot in slots {
            if let Some(p) = slot.lock().await.process.take() {
                p.shutdown().await;
            }
        }
    }
}

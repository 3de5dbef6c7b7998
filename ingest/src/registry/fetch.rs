//! Fetching from a registry: an http(s) URL or a local file (`file://`
//! URL or path), with a size cap and a timeout, hashing as it reads.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use http_client::Url;
use sha2::{Digest, Sha256};

use super::RegistryError;

/// Where an index or a release manifest is: an `http://`, `https://` or
/// `file://` URL, or a file path (relative to the working directory).
pub fn location(text: &str) -> Result<Url, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("no registry configured: set registry.url to an index URL or file".to_owned());
    }
    let lower = text.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("file://") {
        return Url::parse(text).map_err(|e| format!("invalid URL {text:?}: {e}"));
    }
    if text.contains("://") {
        return Err(format!(
            "unsupported URL {text:?}: use http(s)://, file:// or a file path"
        ));
    }
    let path = std::path::absolute(Path::new(text)).map_err(|e| format!("invalid path {text:?}: {e}"))?;
    Url::from_file_path(&path).map_err(|()| format!("invalid path {text:?}"))
}

/// `url` resolved against `base` (an absolute URL is kept as it is).
pub fn resolve(base: &Url, url: &str) -> Result<Url, RegistryError> {
    base.join(url.trim()).map_err(|e| RegistryError::Download {
        url: url.to_owned(),
        reason: format!("invalid URL: {e}"),
    })
}

/// An HTTP client with a timeout per request, and a size cap.
#[derive(Clone, Debug)]
pub struct Fetcher {
    http: http_client::Client,
    pub max_bytes: u64,
}

impl Fetcher {
    pub fn new(timeout: Duration, max_bytes: u64) -> Result<Fetcher, String> {
        let http = http_client::Client::builder()
            .user_agent(concat!("svc-registry/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .timeout(timeout)
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(Fetcher { http, max_bytes })
    }

    /// The whole document at `url`, at most `cap` bytes.
    pub async fn get(&self, url: &Url, cap: u64) -> Result<Vec<u8>, RegistryError> {
        let mut out = Vec::new();
        self.copy(url, &mut out, cap).await?;
        Ok(out)
    }

    /// Writes what is at `url` into `sink` (at most the fetcher's cap) and
    /// returns its SHA-256, lowercase hex.
    pub async fn download(&self, url: &Url, sink: &mut impl Write) -> Result<String, RegistryError> {
        let mut hashing = Hashing {
            inner: sink,
            hasher: Sha256::new(),
        };
        self.copy(url, &mut hashing, self.max_bytes).await?;
        Ok(hex::encode(hashing.hasher.finalize()))
    }

    async fn copy(&self, url: &Url, sink: &mut impl Write, cap: u64) -> Result<(), RegistryError> {
        let fail = |reason: String| RegistryError::Download {
            url: url.to_string(),
            reason,
        };
        let too_large = || fail(format!("larger than {cap} bytes"));
        match url.scheme() {
            "file" => {
                let path = url
                    .to_file_path()
                    .map_err(|()| fail("not a local file path".to_owned()))?;
                let mut file = std::fs::File::open(&path).map_err(|e| fail(e.to_string()))?;
                let len = file.metadata().map_err(|e| fail(e.to_string()))?.len();
                if len > cap {
                    return Err(too_large());
                }
                std::io::copy(&mut file, sink).map_err(|e| fail(e.to_string()))?;
                Ok(())
            }
            "http" | "https" => {
                let mut resp = self
                    .http
                    .get(url.clone())
                    .send()
                    .await
                    .map_err(|e| fail(describe(&e)))?;
                if !resp.status().is_success() {
                    return Err(fail(format!("HTTP {}", resp.status().as_u16())));
                }
                if resp.content_length().is_some_and(|n| n > cap) {
                    return Err(too_large());
                }
                let mut read = 0u64;
                while let Some(chunk) = resp.chunk().await.map_err(|e| fail(describe(&e)))? {
                    read += chunk.len() as u64;
                    if read > cap {
                        return Err(too_large());
                    }
                    sink.write_all(&chunk).map_err(|e| fail(e.to_string()))?;
                }
                Ok(())
            }
            other => Err(fail(format!("unsupported scheme {other:?}"))),
        }
    }
}

/// A reqwest error with its causes, which say what actually failed.
fn describe(e: &http_client::Error) -> String {
    let mut text = if e.is_timeout() {
        "timed out".to_owned()
    } else {
        e.to_string()
    };
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}

struct Hashing<'a, W: Write> {
    inner: &'a mut W,
    hasher: Sha256,
}

impl<W: Write> Write for Hashing<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

//! A real `moto_server` (PyPI `moto[server]`, installed into `.venv` by
//! `scripts/test`) as the S3 of the tests.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Instant;

use super::{POLL_PAUSE, START_DEADLINE};

/// A `moto_server` (PyPI `moto[server]`) on a free port, killed on drop.
pub struct Moto {
    child: std::process::Child,
    pub endpoint: String,
}

impl Moto {
    pub async fn start_on(port: u16) -> Moto {
        let child = std::process::Command::new("moto_server")
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start moto_server ({e}): run the suite with scripts/test, which installs it into .venv")
            });
        let m = Moto {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
        };
        let http = reqwest::Client::new();
        let end = Instant::now() + START_DEADLINE;
        while http.get(format!("{}/moto-api/", m.endpoint)).send().await.is_err() {
            assert!(Instant::now() < end, "moto_server did not answer on {}", m.endpoint);
            tokio::time::sleep(POLL_PAUSE).await;
        }
        m
    }

    pub async fn create_bucket(&self, bucket: &str) {
        let r = reqwest::Client::new()
            .put(format!("{}/{bucket}", self.endpoint))
            .send()
            .await
            .expect("create bucket");
        assert!(r.status().is_success(), "create bucket: {}", r.status());
    }

    /// Writes object `key` of `bucket`.
    pub async fn put_object(&self, bucket: &str, key: &str, body: Vec<u8>) {
        let auth =
            "AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0";
        let r = reqwest::Client::new()
            .put(format!("{}/{bucket}/{key}", self.endpoint))
            .header("authorization", auth)
            .body(body)
            .send()
            .await
            .expect("put object");
        assert!(r.status().is_success(), "put {bucket}/{key}: {}", r.status());
    }

    /// Every object under `prefix/`, by name without the prefix. (moto
    /// refuses anonymous object reads; it accepts any signature.)
    pub async fn objects(&self, bucket: &str, prefix: &str) -> BTreeMap<String, Vec<u8>> {
        let http = reqwest::Client::new();
        let auth =
            "AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0";
        let list = http
            .get(format!("{}/{bucket}?list-type=2&prefix={prefix}/", self.endpoint))
            .header("authorization", auth)
            .send()
            .await
            .expect("list")
            .text()
            .await
            .expect("list body");
        let mut out = BTreeMap::new();
        for part in list.split("<Key>").skip(1) {
            let key = part.split("</Key>").next().expect("key");
            let resp = http
                .get(format!("{}/{bucket}/{key}", self.endpoint))
                .header("authorization", auth)
                .send()
                .await
                .expect("get object");
            assert!(resp.status().is_success(), "get {key}: {}", resp.status());
            let bytes = resp.bytes().await.expect("object body");
            let name = key.strip_prefix(&format!("{prefix}/")).expect("under the prefix");
            out.insert(name.to_owned(), bytes.to_vec());
        }
        out
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

//! etcd's mutual TLS: a client with the CA and its certificate works, one
//! without a client certificate or trusting another CA is refused with a
//! clear error.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::time::Duration;

use common::{EtcdServer, make_certs};
use svc_cluster::{Election, Etcd, LeaderInfo, Lease, TlsFiles};

#[tokio::test]
async fn mutual_tls_works_and_a_client_without_the_right_credentials_is_refused() {
    let etcd = EtcdServer::start_tls().await;
    assert!(etcd.url().starts_with("https://"));
    let client = etcd.client();
    client.put("svc/tls", "yes", 0).await.unwrap();
    assert_eq!(client.get("svc/tls").await.unwrap().unwrap().value, b"yes");
    // Streams (keep-alive, watch) work over TLS too.
    let lease = Lease::grant(&client, Duration::from_secs(2)).await.unwrap();
    let me = LeaderInfo {
        id: "a".into(),
        url: "https://a:8443".into(),
    };
    let leader = Election::new(&client, "svc/leader")
        .campaign(&lease, &me)
        .await
        .unwrap();
    assert!(leader.is_leader());

    let certs = etcd.certs().unwrap().clone();
    // No client certificate: etcd ends the handshake.
    let mut anonymous = etcd.config();
    anonymous.tls = Some(TlsFiles {
        ca: certs.ca.clone(),
        cert: None,
        key: None,
        server_name: None,
    });
    let err = Etcd::connect(&anonymous).unwrap().get("svc/tls").await.unwrap_err();
    assert!(err.to_string().contains(&etcd.url()), "{err}");

    // A client trusting another CA refuses the server.
    let other = tempfile::tempdir().unwrap();
    let other_certs = make_certs(other.path());
    let mut stranger = etcd.config();
    stranger.tls = Some(TlsFiles {
        ca: other_certs.ca,
        cert: Some(certs.client_cert.clone()),
        key: Some(certs.client_key.clone()),
        server_name: None,
    });
    assert!(Etcd::connect(&stranger).unwrap().get("svc/tls").await.is_err());

    // A certificate without its key is a configuration error.
    let mut half = etcd.config();
    half.tls = Some(TlsFiles {
        ca: certs.ca,
        cert: Some(certs.client_cert),
        key: None,
        server_name: None,
    });
    assert!(Etcd::connect(&half).unwrap_err().to_string().contains("needs its key"));
}

//! The handshake line a plugin prints on stdout, from arbitrary bytes read
//! as the host reads them (lossy UTF-8): parsing never panics; a line that
//! parses prints back, field by field, to a line that parses to the same
//! handshake; and a TCP address it accepts makes an endpoint URI or an
//! error, never a panic (as the host dials it).

#![no_main]

use libfuzzer_sys::fuzz_target;
use svc_ingest::host::{Net, parse_handshake};

fuzz_target!(|data: &[u8]| {
    let line = String::from_utf8_lossy(data);
    let Ok(h) = parse_handshake(&line) else {
        return;
    };
    let printed = format!(
        "{}|{}|{}|{}|{}|{}|{}\n",
        h.core,
        h.app,
        h.net,
        h.addr,
        h.proto,
        h.cert.as_deref().unwrap_or(""),
        h.mux
    );
    let again = parse_handshake(&printed).unwrap_or_else(|e| panic!("{line:?} printed as {printed:?}: {e}"));
    assert_eq!(again, h, "{line:?} printed as {printed:?}");
    assert!(!h.addr.is_empty() && !h.addr.contains('|'));
    if h.net == Net::Tcp {
        let _ = tonic::transport::Endpoint::from_shared(format!("http://{}", h.addr));
    }
});

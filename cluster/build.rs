//! Compiles the subset of etcd's v3 API under `proto/` into tonic/prost
//! client code.
//!
//! `protox` parses the files in pure Rust (no `protoc`), so building the
//! daemon needs nothing outside the Rust toolchain.

use std::path::Path;

const PROTO_ROOT: &str = "proto";

const PROTOS: &[&str] = &["etcd/mvccpb/kv.proto", "etcd/etcdserverpb/rpc.proto"];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for file in PROTOS {
        println!("cargo:rerun-if-changed={}", Path::new(PROTO_ROOT).join(file).display());
    }
    println!("cargo:rerun-if-changed=build.rs");

    let fds = protox::compile(PROTOS, [PROTO_ROOT])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(false)
        .compile_fds(fds)?;
    Ok(())
}

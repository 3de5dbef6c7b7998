//! Compiles the .proto files under `proto/` into tonic/prost code.
//!
//! `protox` parses them in pure Rust (no `protoc` needed); `tonic-prost-build`
//! generates the messages and both client and server code.

use std::path::Path;

const PROTO_ROOT: &str = "proto";

const PROTOS: &[&str] = &[
    "svc/provider/v1/provider.proto",
    "svc/heuristic/v1/heuristic.proto",
    "plugin/grpc_controller.proto",
    "plugin/grpc_stdio.proto",
    "grpc/health/v1/health.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for file in PROTOS {
        println!("cargo:rerun-if-changed={}", Path::new(PROTO_ROOT).join(file).display());
    }
    println!("cargo:rerun-if-changed=build.rs");

    let fds = protox::compile(PROTOS, [PROTO_ROOT])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(fds)?;
    Ok(())
}

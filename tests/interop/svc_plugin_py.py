#!/usr/bin/env python3
"""A provider plugin written with Python's grpcio from SPEC.md alone.

It speaks the svc plugin protocol over TCP: checks the magic cookie, serves
svc.provider.v1.Provider, grpc.health.v1.Health and plugin.GRPCController,
prints the go-plugin handshake line, and streams a small estate of provider
"pyco". The Provider stubs are generated at start from the repository's
.proto files with grpc_tools; Health and the controller are served as raw
handlers so no second "grpc" package shadows grpcio. Used by
tests/e2e_interop.rs.
"""

import json
import os
import sys
import tempfile
import threading
from concurrent import futures


def fail(msg):
    print(msg, file=sys.stderr, flush=True)
    sys.exit(1)


def generate_stubs(proto_root):
    from grpc_tools import protoc

    out = tempfile.mkdtemp(prefix="svc-py-plugin-")
    rc = protoc.main(
        ["protoc", f"-I{proto_root}", f"--python_out={out}", f"--grpc_python_out={out}", "svc/provider/v1/provider.proto"]
    )
    if rc != 0:
        fail(f"generating stubs from {proto_root} failed ({rc})")
    sys.path.insert(0, out)


NODES = [
    ("crn:svc:pyco:eu-1:acct-1:bucket:logs", {"state": "active", "size_gib": 120, "tags": {"env": "prod"}}, 2.76),
    ("crn:svc:pyco:eu-1:acct-1:bucket:backups", {"state": "active", "size_gib": 900, "versioning": True}, 20.7),
    ("crn:svc:pyco:eu-1:acct-1:function:resize", {"state": "idle", "invocations_90d": 0}, 0.0),
]
EDGES = [
    ("crn:svc:pyco:eu-1:acct-1:function:resize", "crn:svc:pyco:eu-1:acct-1:bucket:logs", "WRITES"),
    ("crn:svc:pyco:eu-1:acct-1:function:resize", "crn:svc:pyco:eu-1:acct-1:bucket:backups", "READS"),
]


def main():
    if os.environ.get("SVC_PLUGIN") != "svc":
        fail("This binary is an svc provider plugin; it is started by the svc daemon, not by hand.")
    if "1" not in os.environ.get("PLUGIN_PROTOCOL_VERSIONS", "1").split(","):
        fail("this plugin speaks protocol version 1 only")
    generate_stubs(os.environ["SVC_PY_PROTO_ROOT"])

    import grpc
    from svc.provider.v1 import provider_pb2 as pb
    from svc.provider.v1 import provider_pb2_grpc as pb_grpc

    class Provider(pb_grpc.ProviderServicer):
        def Handshake(self, request, context):
            return pb.HandshakeResponse(compatible=True, plugin_version="0.1.0-py", message="")

        def Scan(self, request, context):
            print(json.dumps({"@level": "info", "@message": "scan", "config": dict(request.config)}), file=sys.stderr)
            yield pb.ScanResponse(
                nodes=[pb.Node(crn=c, properties=json.dumps(p).encode(), cost=cost) for c, p, cost in NODES]
            )
            yield pb.ScanResponse(edges=[pb.Edge(source_crn=a, target_crn=b, relation=r) for a, b, r in EDGES])

        def ApplyQuarantine(self, request, context):
            return pb.QuarantineResponse(success=True, message="isolated")

        def CheckReversibility(self, request, context):
            return pb.ReversibilityProof(safe=True, reason="")

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    pb_grpc.add_ProviderServicer_to_server(Provider(), server)
    ident = lambda b: b  # noqa: E731
    # grpc.health.v1.Health/Check: HealthCheckResponse{status: SERVING} is field 1 = 1.
    health = grpc.method_handlers_generic_handler(
        "grpc.health.v1.Health",
        {"Check": grpc.unary_unary_rpc_method_handler(lambda req, ctx: b"\x08\x01", ident, ident)},
    )
    stop = threading.Event()

    def shutdown(req, ctx):
        stop.set()
        return b""

    controller = grpc.method_handlers_generic_handler(
        "plugin.GRPCController", {"Shutdown": grpc.unary_unary_rpc_method_handler(shutdown, ident, ident)}
    )
    server.add_generic_rpc_handlers((health, controller))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"1|1|tcp|127.0.0.1:{port}|grpc|", flush=True)
    stop.wait()
    server.stop(1).wait()


if __name__ == "__main__":
    main()

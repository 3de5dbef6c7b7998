// A provider plugin built with HashiCorp go-plugin, the framework most
// third-party plugins use. It serves svc.provider.v1.Provider through
// plugin.Serve, so the handshake line, health service and (where the
// go-plugin release has them) controller and stdio services are go-plugin's
// own. Used by tests/e2e_interop.rs; built offline from Debian's packages.
package main

import (
	"context"
	"encoding/json"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pb "svcinterop/providerpb"
)

type provider struct {
	pb.UnimplementedProviderServer
}

func (provider) Handshake(ctx context.Context, req *pb.HandshakeRequest) (*pb.HandshakeResponse, error) {
	return &pb.HandshakeResponse{Compatible: true, PluginVersion: "0.1.0-go"}, nil
}

func props(v map[string]interface{}) []byte {
	b, _ := json.Marshal(v)
	return b
}

func (provider) Scan(req *pb.ScanRequest, stream pb.Provider_ScanServer) error {
	region := req.Config["region"]
	if region == "" {
		region = "us-1"
	}
	crn := func(kind, id string) string { return "crn:svc:goco:" + region + ":acct-9:" + kind + ":" + id }
	if err := stream.Send(&pb.ScanResponse{Nodes: []*pb.Node{
		{Crn: crn("vm", "web-1"), Properties: props(map[string]interface{}{"state": "running", "cpu_avg_7d": 3.5}), Cost: 61.32},
		{Crn: crn("disk", "web-1-root"), Properties: props(map[string]interface{}{"state": "attached", "size_gib": 64}), Cost: 5.12},
	}}); err != nil {
		return err
	}
	return stream.Send(&pb.ScanResponse{Edges: []*pb.Edge{
		{SourceCrn: crn("disk", "web-1-root"), TargetCrn: crn("vm", "web-1"), Relation: "ATTACHED_TO"},
	}})
}

func (provider) ApplyQuarantine(ctx context.Context, req *pb.QuarantineRequest) (*pb.QuarantineResponse, error) {
	return &pb.QuarantineResponse{Success: true, Message: "isolated"}, nil
}

func (provider) CheckReversibility(ctx context.Context, req *pb.ReversibilityRequest) (*pb.ReversibilityProof, error) {
	return &pb.ReversibilityProof{Safe: true}, nil
}

type providerPlugin struct {
	plugin.Plugin
}

func (providerPlugin) GRPCServer(b *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterProviderServer(s, provider{})
	return nil
}

func (providerPlugin) GRPCClient(ctx context.Context, b *plugin.GRPCBroker, c *grpc.ClientConn) (interface{}, error) {
	return pb.NewProviderClient(c), nil
}

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: plugin.HandshakeConfig{ProtocolVersion: 1, MagicCookieKey: "SVC_PLUGIN", MagicCookieValue: "svc"},
		Plugins:         map[string]plugin.Plugin{"provider": providerPlugin{}},
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}

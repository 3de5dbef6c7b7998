#!/bin/sh
# Builds the go-plugin provider offline from Debian's Go packages:
#   tests/interop/go/build.sh OUT_BINARY
# Generates the Go stubs of svc.provider.v1 with protoc-gen-go and
# protoc-gen-go-grpc into a temporary GOPATH, then `go build`s main.go.
set -eu
out=$1
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
gopath=$(mktemp -d)
trap 'rm -rf "$gopath"' EXIT
pkg="$gopath/src/svcinterop/providerpb"
mkdir -p "$pkg" "$gopath/src/svcinterop/plugin"
m="Msvc/provider/v1/provider.proto=svcinterop/providerpb"
protoc -I "$repo/proto/proto" --go_out="$pkg" --go_opt=paths=source_relative --go_opt="$m" \
  --go-grpc_out="$pkg" --go-grpc_opt=paths=source_relative --go-grpc_opt="$m" \
  svc/provider/v1/provider.proto
mv "$pkg"/svc/provider/v1/*.go "$pkg"/
cp "$here/main.go" "$gopath/src/svcinterop/plugin/main.go"
cd "$gopath/src/svcinterop/plugin"
GO111MODULE=off GOPATH="$gopath:/usr/share/gocode" GOPROXY=off GOCACHE="$gopath/cache" \
  go build -o "$out" .

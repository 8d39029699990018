#!/usr/bin/env bash
# gen.sh [OUT_DIR]: generates grpc_service.pb.go and grpc_service_grpc.pb.go
# from grpc_service.proto into OUT_DIR (default: this directory) with
# protoc (Debian's protobuf-compiler, `make deps`) and the protoc-gen-go and
# protoc-gen-go-grpc versions go.mod pins as tools. `go generate
# ./serve/inferencepb` runs it; TestGeneratedCodeIsUpToDate compares its
# output with the committed files.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here}
command -v protoc >/dev/null || { echo "gen.sh: no protoc: run \`make deps\` (Debian package protobuf-compiler)" >&2; exit 1; }
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
(cd "$here" && go build -o "$bin/" google.golang.org/protobuf/cmd/protoc-gen-go google.golang.org/grpc/cmd/protoc-gen-go-grpc)
pkg=github.com/clinfer/clinfer/serve/inferencepb
cd "$here"
protoc --plugin=protoc-gen-go="$bin/protoc-gen-go" --plugin=protoc-gen-go-grpc="$bin/protoc-gen-go-grpc" \
	--go_out="$out" --go_opt=paths=source_relative --go_opt=Mgrpc_service.proto=$pkg \
	--go-grpc_out="$out" --go-grpc_opt=paths=source_relative --go-grpc_opt=Mgrpc_service.proto=$pkg \
	grpc_service.proto

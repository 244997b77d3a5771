#!/bin/sh
# Regenerates the Go code for every .proto file with the generators pinned in go.mod.
set -eu
cd "$(dirname "$0")"
gen_go=$(go tool -n protoc-gen-go)
gen_grpc=$(go tool -n protoc-gen-go-grpc)
find boxoffice -name '*.pb.go' -delete
protoc -I . \
  --plugin=protoc-gen-go="$gen_go" --go_out=. --go_opt=paths=source_relative \
  --plugin=protoc-gen-go-grpc="$gen_grpc" --go-grpc_out=. --go-grpc_opt=paths=source_relative \
  $(find boxoffice -name '*.proto' | sort)

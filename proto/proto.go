// Package proto holds the gRPC contracts between BoxOffice services and the BFFs.
//
// The .proto files under boxoffice/ are the source of truth; the Go beside them is generated
// by `make proto` (go generate here), committed, and never edited by hand. The generators are
// pinned as tools in this module's go.mod, so the same protoc gives the same output.
package proto

//go:generate sh gen.sh

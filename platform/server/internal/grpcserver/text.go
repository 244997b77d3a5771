package grpcserver

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/textrule"
)

// checkTextUnary refuses, with codes.InvalidArgument naming the field ("items[2].name: want
// ..."), a call whose request holds text that breaks textrule.InMessage in any string field
// at any depth (map keys included), before it reaches the handler: services store what they
// are called with, and PostgreSQL's text type refuses NUL as an internal error. It is the
// rule the HTTP side applies in httpapi.DecodeJSON and httpserver.RefuseBadText.
func checkTextUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if m, ok := req.(proto.Message); ok {
		if path, rule, bad := textrule.InMessage(m.ProtoReflect()); bad {
			return nil, problem.GRPC(problem.InvalidField(path, "%s", rule))
		}
	}
	return handler(ctx, req)
}

package grpcserver

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/textrule"
)

// checkTextUnary refuses a call whose request holds, in any string field of any depth (in
// nested messages, lists, map keys and values), text that breaks the text rule
// (textrule.InMessage): a NUL or another C0 control character other than tab, line feed and
// carriage return; in a field named as an identifier (id, event_id, email...), tabs and line
// breaks too. The call fails with codes.InvalidArgument naming the field ("items[2].name:
// want ...") and never reaches the handler.
//
// Services store what they are called with, and PostgreSQL's text type refuses NUL as an
// internal error; the HTTP side refuses it in bodies (problem.DecodeJSON) and in paths and
// queries (httpserver.RefuseBadText), and this is the same rule for gRPC.
func checkTextUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if m, ok := req.(proto.Message); ok {
		if path, rule, bad := textrule.InMessage(m.ProtoReflect()); bad {
			return nil, problem.GRPC(problem.InvalidField(path, "%s", rule))
		}
	}
	return handler(ctx, req)
}

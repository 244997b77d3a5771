package grpcserver

import (
	"context"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"boxoffice.dev/platform/problem"
)

// checkTextUnary refuses a call whose request holds, in any string field of any depth (in
// nested messages, lists, map keys and values), text that problem.CheckFreeText refuses: a
// NUL or another C0 control character other than tab, line feed and carriage return.
// The call fails with codes.InvalidArgument naming the field ("items[2].name: want ...")
// and never reaches the handler.
//
// Services store what they are called with, and PostgreSQL's text type refuses NUL as an
// internal error; the HTTP side refuses it in bodies (problem.DecodeJSON) and in paths and
// queries (httpserver.RefuseBadText), and this is the same rule for gRPC. Free text is
// allowed its tabs and line breaks because the interceptor cannot tell a title from an id;
// an id with a line break is for the handler to refuse. proto3 itself already refuses
// invalid UTF-8 in string fields when decoding.
func checkTextUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if m, ok := req.(proto.Message); ok {
		if path, value, bad := badText(m.ProtoReflect()); bad {
			return nil, problem.GRPC(problem.CheckFreeText(path, value))
		}
	}
	return handler(ctx, req)
}

// badText returns the path ("title", "items[2].name", "labels.vip") and the value of the
// first set string field, or string map key, in m that problem.CheckFreeText refuses, and
// whether there is one. Fields are named as in the .proto file.
func badText(m protoreflect.Message) (path, value string, bad bool) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		name := string(fd.Name())
		switch {
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				if sub, s, ok := badSingular(fd, l.Get(i)); ok {
					path, value, bad = name+"["+strconv.Itoa(i)+"]"+dotted(sub), s, true
					break
				}
			}
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				key := k.String()
				if fd.MapKey().Kind() == protoreflect.StringKind && !freeText(key) {
					path, value, bad = name+"."+key, key, true
				} else if sub, s, ok := badSingular(fd.MapValue(), mv); ok {
					path, value, bad = name+"."+key+dotted(sub), s, true
				}
				return !bad
			})
		default:
			if sub, s, ok := badSingular(fd, v); ok {
				path, value, bad = name+dotted(sub), s, true
			}
		}
		return !bad
	})
	return path, value, bad
}

// badSingular is badText for one value of field fd: a string checked, a message walked, and
// anything else (numbers, bytes, enums) passed.
func badSingular(fd protoreflect.FieldDescriptor, v protoreflect.Value) (path, value string, bad bool) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if s := v.String(); !freeText(s) {
			return "", s, true
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return badText(v.Message())
	}
	return "", "", false
}

func freeText(s string) bool { return problem.CheckFreeText("", s) == nil }

// dotted is a nested field's path as it follows its parent's: ".name", or "" for none.
func dotted(sub string) string {
	if sub == "" {
		return ""
	}
	return "." + sub
}

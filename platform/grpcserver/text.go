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
// NUL or another C0 control character other than tab, line feed and carriage return; in a
// field problem.IdentifierField names (id, event_id, email...), tabs and line breaks too.
// The call fails with codes.InvalidArgument naming the field ("items[2].name: want ...")
// and never reaches the handler.
//
// Services store what they are called with, and PostgreSQL's text type refuses NUL as an
// internal error; the HTTP side refuses it in bodies (problem.DecodeJSON) and in paths and
// queries (httpserver.RefuseBadText), and this is the same rule for gRPC, telling a title
// from an id by the field's name as DecodeJSON does. proto3 itself already refuses invalid
// UTF-8 in string fields when decoding.
func checkTextUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if m, ok := req.(proto.Message); ok {
		if f, bad := badText(m.ProtoReflect()); bad {
			return nil, problem.GRPC(problem.CheckField(f.path, f.name, f.value))
		}
	}
	return handler(ctx, req)
}

// badField is text a check refused: where it is in the request ("items[2].name"), the name
// of the field whose rule refused it (problem.CheckField; "" for a map key, free text), and
// the text.
type badField struct{ path, name, value string }

// badText returns the first set string field, or string map key, in m that
// problem.CheckField refuses, and whether there is one. Fields are named as in the .proto
// file.
func badText(m protoreflect.Message) (f badField, bad bool) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		name := string(fd.Name())
		switch {
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				if sub, ok := badSingular(fd, name, l.Get(i)); ok {
					f, bad = sub, true
					f.path = name + "[" + strconv.Itoa(i) + "]" + dotted(sub.path)
					break
				}
			}
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				key := k.String()
				if fd.MapKey().Kind() == protoreflect.StringKind && !validField("", key) {
					f, bad = badField{path: name + "." + key, value: key}, true
				} else if sub, ok := badSingular(fd.MapValue(), name, mv); ok {
					f, bad = sub, true
					f.path = name + "." + key + dotted(sub.path)
				}
				return !bad
			})
		default:
			if sub, ok := badSingular(fd, name, v); ok {
				f, bad = sub, true
				f.path = name + dotted(sub.path)
			}
		}
		return !bad
	})
	return f, bad
}

// badSingular is badText for one value of field fd, named name (a list's or map's values go
// by the list's or map's name): a string checked, a message walked, and anything else
// (numbers, bytes, enums) passed. The path it returns is below the field's.
func badSingular(fd protoreflect.FieldDescriptor, name string, v protoreflect.Value) (badField, bool) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if s := v.String(); !validField(name, s) {
			return badField{name: name, value: s}, true
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return badText(v.Message())
	}
	return badField{}, false
}

// validField reports whether s passes the check for a field called name.
func validField(name, s string) bool { return problem.CheckField("", name, s) == nil }

// dotted is a nested field's path as it follows its parent's: ".name", or "" for none.
func dotted(sub string) string {
	if sub == "" {
		return ""
	}
	return "." + sub
}

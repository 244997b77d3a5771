package grpcserver

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// holdType is a request message with identifier fields (event_id, seat_ids), free text
// (title), a map and a nested message, built at run time as the services' generated
// requests are at compile time.
func holdType(t *testing.T) protoreflect.MessageDescriptor {
	t.Helper()
	str, msg := descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(), descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum()
	opt, rep := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
	field := func(name string, n int32, typ *descriptorpb.FieldDescriptorProto_Type, label *descriptorpb.FieldDescriptorProto_Label, typeName string) *descriptorpb.FieldDescriptorProto {
		f := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(n), Type: typ, Label: label}
		if typeName != "" {
			f.TypeName = proto.String(typeName)
		}
		return f
	}
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name: proto.String("hold_test.proto"), Package: proto.String("textcheck"), Syntax: proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String("Hold"),
			Field: []*descriptorpb.FieldDescriptorProto{
				field("event_id", 1, str, opt, ""),
				field("seat_ids", 2, str, rep, ""),
				field("title", 3, str, opt, ""),
				field("labels", 4, msg, rep, ".textcheck.Hold.LabelsEntry"),
				field("parent", 5, msg, opt, ".textcheck.Hold"),
			},
			NestedType: []*descriptorpb.DescriptorProto{{
				Name:    proto.String("LabelsEntry"),
				Field:   []*descriptorpb.FieldDescriptorProto{field("key", 1, str, opt, ""), field("value", 2, str, opt, "")},
				Options: &descriptorpb.MessageOptions{MapEntry: proto.Bool(true)},
			}},
		}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fd.Messages().ByName("Hold")
}

// TestIdentifierFieldsRefuseLineBreaks checks that tabs and line breaks, allowed in free
// text, are refused in fields named as identifiers, at any depth, with the strict rule's
// message; the handler is not called.
func TestIdentifierFieldsRefuseLineBreaks(t *testing.T) {
	md := holdType(t)
	hold := func(set func(m *dynamicpb.Message)) proto.Message {
		m := dynamicpb.NewMessage(md)
		set(m)
		return m
	}
	fd := func(name string) protoreflect.FieldDescriptor { return md.Fields().ByName(protoreflect.Name(name)) }
	tests := []struct {
		name string
		in   proto.Message
		path string // "" = accepted
	}{
		{"clean", hold(func(m *dynamicpb.Message) {
			m.Set(fd("event_id"), protoreflect.ValueOfString("evt-001"))
			m.Set(fd("title"), protoreflect.ValueOfString("Line one\nline\ttwo"))
		}), ""},
		{"tab in an id", hold(func(m *dynamicpb.Message) { m.Set(fd("event_id"), protoreflect.ValueOfString("evt\t001")) }), "event_id"},
		{"line feed in a list of ids", hold(func(m *dynamicpb.Message) {
			l := m.Mutable(fd("seat_ids")).List()
			l.Append(protoreflect.ValueOfString("A-1"))
			l.Append(protoreflect.ValueOfString("A-2\n"))
		}), "seat_ids[1]"},
		{"line feed in a map of free text", hold(func(m *dynamicpb.Message) {
			m.Mutable(fd("labels")).Map().Set(protoreflect.ValueOfString("note").MapKey(), protoreflect.ValueOfString("a\nb"))
		}), ""},
		{"carriage return in a nested id", hold(func(m *dynamicpb.Message) {
			p := m.Mutable(fd("parent")).Message()
			p.Set(fd("event_id"), protoreflect.ValueOfString("evt\r"))
		}), "parent.event_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			called := false
			_, err := checkTextUnary(context.Background(), tt.in, nil, func(context.Context, any) (any, error) {
				called = true
				return nil, nil
			})
			if tt.path == "" {
				if err != nil || !called {
					t.Errorf("checkTextUnary(%v) = %v, handler called %v; want nil, true", tt.in, err, called)
				}
				return
			}
			st := status.Convert(err)
			if want := tt.path + ": want valid UTF-8 text without control characters"; st.Code() != codes.InvalidArgument || st.Message() != want || called {
				t.Errorf("checkTextUnary(%v) = %v, handler called %v; want InvalidArgument %q, false", tt.in, err, called, want)
			}
		})
	}
}

func TestCheckTextRefusesBeforeTheHandler(t *testing.T) {
	r := start(t, Options{}, time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tests := []struct {
		name, in string
		want     codes.Code
		msg      string // the start of the status message; "" = not checked
	}{
		{"clean", "Rock in Rio", codes.OK, ""},
		{"line breaks", "line one\nline two", codes.OK, ""},
		{"NUL", "evt\x00", codes.InvalidArgument, "value: want valid UTF-8 text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.call(ctx, "Echo", tt.in)
			st := status.Convert(err)
			if st.Code() != tt.want || !strings.HasPrefix(st.Message(), tt.msg) {
				t.Fatalf("Echo(%q) = %q, %v; want code %v, message %q", tt.in, got, err, tt.want, tt.msg)
			}
			if tt.want == codes.OK && got != tt.in {
				t.Errorf("Echo(%q) = %q, want it echoed", tt.in, got)
			}
		})
	}
}

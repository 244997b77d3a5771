package textrule_test

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"boxoffice.dev/platform/textrule"
)

func TestInMessage(t *testing.T) {
	// descriptorpb has repeated nested messages, structpb maps of messages and lists: the
	// shapes of the services' requests, without generated code of their own.
	descriptor := func(fields ...string) proto.Message {
		d := &descriptorpb.DescriptorProto{Name: proto.String("Event")}
		for _, f := range fields {
			d.Field = append(d.Field, &descriptorpb.FieldDescriptorProto{Name: proto.String(f)})
		}
		return d
	}
	object := func(m map[string]any) proto.Message {
		s, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	tests := []struct {
		name string
		in   proto.Message
		path string // "" = accepted
	}{
		{"empty", &wrapperspb.StringValue{}, ""},
		{"clean", wrapperspb.String("Rock in Rio, São Paulo 🎫"), ""},
		{"tabs and line breaks", wrapperspb.String("one\r\n\ttwo"), ""},
		{"NUL", wrapperspb.String("a\x00b"), "value"},
		{"escape", wrapperspb.String("\x1b[31m"), "value"},
		{"DEL", wrapperspb.String("a\x7f"), "value"},
		{"clean lists", descriptor("id", "title"), ""},
		{"NUL in a list item's field", descriptor("id", "title", "x\x00"), "field[2].name"},
		{"NUL in a map value", object(map[string]any{"city": "ok", "title": "a\x00"}), "fields.title.string_value"},
		{"NUL in a map key", object(map[string]any{"ti\x00tle": "ok"}), "fields.ti\x00tle"},
		{"NUL deep in lists and maps", object(map[string]any{"items": []any{"ok", map[string]any{"name": "x\x00"}}}),
			"fields.items.list_value.values[1].struct_value.fields.name.string_value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, rule, bad := textrule.InMessage(tt.in.ProtoReflect())
			if bad != (tt.path != "") || path != tt.path || bad && rule != textrule.Free {
				t.Errorf("InMessage(%v) = %q, %q, %v; want %q, Free, %v", tt.in, path, rule, bad, tt.path, tt.path != "")
			}
		})
	}
}

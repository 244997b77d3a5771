package textrule

import (
	"strconv"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// InMessage returns the path of the first set string field, or string map key, of m that
// breaks its rule ("items[2].name", fields named as in the .proto file), the rule it breaks
// (Check by the field's name; Free for a map key), and whether there is one. It walks nested
// messages, lists and maps at any depth; numbers, bytes and enums hold no text. proto3
// already refuses invalid UTF-8 in string fields when decoding, so in practice it finds
// control characters.
func InMessage(m protoreflect.Message) (path, rule string, bad bool) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		name := string(fd.Name())
		switch {
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				if sub, r, ok := inValue(fd, name, l.Get(i)); ok {
					path, rule, bad = name+"["+strconv.Itoa(i)+"]"+dotted(sub), r, true
					break
				}
			}
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				key := k.String()
				if fd.MapKey().Kind() == protoreflect.StringKind && !ValidFree(key) {
					path, rule, bad = name+"."+key, Free, true
				} else if sub, r, ok := inValue(fd.MapValue(), name, mv); ok {
					path, rule, bad = name+"."+key+dotted(sub), r, true
				}
				return !bad
			})
		default:
			if sub, r, ok := inValue(fd, name, v); ok {
				path, rule, bad = name+dotted(sub), r, true
			}
		}
		return !bad
	})
	return path, rule, bad
}

// inValue is InMessage for one value of field fd, named name (a list's or map's values go
// by the list's or map's name): a string checked, a message walked, and anything else
// passed. The path it returns is below the field's.
func inValue(fd protoreflect.FieldDescriptor, name string, v protoreflect.Value) (path, rule string, bad bool) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if r, ok := Check(name, v.String()); !ok {
			return "", r, true
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return InMessage(v.Message())
	}
	return "", "", false
}

// dotted is a nested field's path as it follows its parent's: ".name", or "" for none.
func dotted(sub string) string {
	if sub == "" {
		return ""
	}
	return "." + sub
}

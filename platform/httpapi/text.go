package httpapi

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"boxoffice.dev/platform/textrule"
)

// badString returns the JSON path ("title", "items[2].name", "labels.vip") of the first
// string in v, or map key, that problem.CheckFreeText refuses (problem.CheckText, in a field
// textrule.Identifier names, ident), whether there is one, and whether that string was an identifier's. It follows
// what encoding/json decodes: pointers, interfaces, exported struct fields under their json
// names (with embedded structs' fields promoted), slices, arrays and maps, and skips what
// cannot hold text (textFields). The path is built only on the way back from a bad string,
// so a clean value costs a walk and no allocation.
func badString(v reflect.Value, ident bool) (path string, bad, badIdent bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return "", false, false
		}
		return badString(v.Elem(), ident)
	case reflect.String:
		return "", !valid(v.String(), ident), ident
	case reflect.Struct:
		for _, f := range textFields(v.Type()) {
			if p, bad, bi := badString(v.Field(f.index), f.ident); bad {
				return joinPath(f.name, p), true, bi
			}
		}
	case reflect.Slice, reflect.Array:
		// Numbers and booleans hold no text, and []byte is base64 or a json.RawMessage.
		if v.Type().Elem().Kind() <= reflect.Complex128 {
			return "", false, false
		}
		for i := range v.Len() {
			if p, bad, bi := badString(v.Index(i), ident); bad {
				return joinPath("["+strconv.Itoa(i)+"]", p), true, bi
			}
		}
	case reflect.Map:
		// A map's keys are names of the caller's choosing, checked as free text, and its
		// values by the key's name, as a field's would be.
		iter := v.MapRange()
		for iter.Next() {
			k := iter.Key()
			if k.Kind() == reflect.String && !textrule.ValidFree(k.String()) {
				return k.String(), true, false
			}
			valueIdent := k.Kind() == reflect.String && textrule.Identifier(k.String())
			if p, bad, bi := badString(iter.Value(), valueIdent); bad {
				return joinPath(fmt.Sprint(k), p), true, bi
			}
		}
	}
	return "", false, false
}

// textField is a struct field that may hold text: its index, its JSON name, and whether
// that name says it holds identifiers (textrule.Identifier).
type textField struct {
	index int
	name  string
	ident bool
}

// textFieldsOf caches textFields by struct type: a request type is walked on every request,
// and its fields' tags and types need reading only once. Safe for concurrent use.
var textFieldsOf sync.Map // reflect.Type -> []textField

// textFields lists the fields of struct type t that encoding/json fills and that may hold
// a string, so a walk skips numbers, booleans, times and byte slices without looking.
func textFields(t reflect.Type) []textField {
	if fs, ok := textFieldsOf.Load(t); ok {
		return fs.([]textField)
	}
	var fs []textField
	for i := range t.NumField() {
		f := t.Field(i)
		if name, ok := jsonName(f); ok && holdsText(f.Type, map[reflect.Type]bool{}) {
			fs = append(fs, textField{index: i, name: name, ident: textrule.Identifier(name)})
		}
	}
	textFieldsOf.Store(t, fs)
	return fs
}

// holdsText reports whether a value of type t may hold a string badString would check.
// seen breaks the cycle of a recursive type: a type already being looked at adds nothing
// its other fields would not.
func holdsText(t reflect.Type, seen map[reflect.Type]bool) bool {
	switch t.Kind() {
	case reflect.String, reflect.Interface:
		return true
	case reflect.Pointer:
		return holdsText(t.Elem(), seen)
	case reflect.Slice, reflect.Array:
		return t.Elem().Kind() > reflect.Complex128 && holdsText(t.Elem(), seen)
	case reflect.Map:
		return t.Key().Kind() == reflect.String || holdsText(t.Elem(), seen)
	case reflect.Struct:
		if seen[t] {
			return false
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			if _, ok := jsonName(f); ok && holdsText(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

// jsonName is the name encoding/json gives struct field f, "" for an embedded struct whose
// fields it promotes, and false when it skips f (unexported, or tagged "-").
func jsonName(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if f.Anonymous && name == "" {
		t := f.Type
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() == reflect.Struct {
			return "", true
		}
	}
	if !f.IsExported() {
		return "", false
	}
	if name == "" {
		name = f.Name
	}
	return name, true
}

// joinPath puts parent before child: "items" and "[2].name" make "items[2].name", "price"
// and "currency" make "price.currency"; an empty parent (a promoted field) adds nothing.
func joinPath(parent, child string) string {
	switch {
	case child == "":
		return parent
	case parent == "":
		return child
	case child[0] == '[':
		return parent + child
	}
	return parent + "." + child
}

// valid reports whether s follows textrule.Strict when ident, else textrule.Free.
func valid(s string, ident bool) bool {
	if ident {
		return textrule.Valid(s)
	}
	return textrule.ValidFree(s)
}

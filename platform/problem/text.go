package problem

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// CheckText returns nil when s is valid UTF-8 without control characters (U+0000 to U+001F
// and U+007F), else an Invalid error naming field. It is the rule for what a request names
// things by: path segments, query values, ids, keys and cursors, where no one types a tab
// or a line break.
//
// The rule exists for storage as much as for the client: PostgreSQL's text type refuses
// NUL and invalid UTF-8 outright (SQLSTATE 22021), so a value holding them would reach the
// database only to fail there as an internal error, where SQLite would store it.
func CheckText(field, s string) error {
	if !validText(s, false) {
		return InvalidField(field, textRule)
	}
	return nil
}

// CheckFreeText is CheckText for free text (a title, a description, a question), where tab,
// line feed and carriage return are allowed: a pasted paragraph holds them. NUL and the
// other C0 controls are still refused; none of them has a meaning in stored text, and NUL
// cannot be stored in PostgreSQL at all.
func CheckFreeText(field, s string) error {
	if !validText(s, true) {
		return InvalidField(field, freeTextRule)
	}
	return nil
}

// IdentifierField reports whether a request field named name holds identifiers, to be
// checked with CheckText rather than CheckFreeText: id, ids, email, key, and names ending in
// _id, _ids, _key (JSON and proto field names here are snake_case) or Id, Ids, Key
// (camelCase). DecodeJSON and the gRPC server's text check go by it, so that a tab or a line
// break in an event_id is refused where it arrives, as it is in a path, without every handler
// checking its own ids. The price of going by names is that a field named so must never be
// prose; none is.
func IdentifierField(name string) bool {
	switch name {
	case "id", "ids", "email", "key":
		return true
	}
	for _, suffix := range []string{"_id", "_ids", "_key", "Id", "Ids", "Key"} {
		if len(name) > len(suffix) && strings.HasSuffix(name, suffix) {
			return true
		}
	}
	return false
}

// CheckField is CheckText for a field IdentifierField names an identifier, else
// CheckFreeText, reporting the problem at path (the field's full path in the request).
func CheckField(path, name, s string) error {
	if IdentifierField(name) {
		return CheckText(path, s)
	}
	return CheckFreeText(path, s)
}

// The messages of CheckText and CheckFreeText.
const (
	textRule     = "want valid UTF-8 text without control characters"
	freeTextRule = "want valid UTF-8 text without control characters other than tab and line breaks"
)

// validText reports whether s is valid UTF-8 without C0 controls or DEL, except tab, line
// feed and carriage return when free. The byte loop is enough for the controls: every byte
// of a multi-byte UTF-8 sequence is 0x80 or above, so a byte below 0x80 is always a whole
// character.
func validText(s string, free bool) bool {
	ascii := true
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf:
			ascii = false
		case c < 0x20 || c == 0x7f:
			if !free || c != '\t' && c != '\n' && c != '\r' {
				return false
			}
		}
	}
	return ascii || utf8.ValidString(s)
}

// badString returns the JSON path ("title", "items[2].name", "labels.vip") of the first
// string in v, or map key, that CheckFreeText refuses (CheckText, in a field IdentifierField
// names, ident), whether there is one, and whether that string was an identifier's. It follows
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
		return "", !validText(v.String(), !ident), ident
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
			if k.Kind() == reflect.String && !validText(k.String(), true) {
				return k.String(), true, false
			}
			valueIdent := k.Kind() == reflect.String && IdentifierField(k.String())
			if p, bad, bi := badString(iter.Value(), valueIdent); bad {
				return joinPath(fmt.Sprint(k), p), true, bi
			}
		}
	}
	return "", false, false
}

// textField is a struct field that may hold text: its index, its JSON name, and whether
// that name says it holds identifiers (IdentifierField).
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
			fs = append(fs, textField{index: i, name: name, ident: IdentifierField(name)})
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

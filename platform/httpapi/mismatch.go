package httpapi

import (
	"bytes"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"time"

	"boxoffice.dev/platform/problem"
)

// mismatch explains why encoding/json refused body (valid JSON, without repeated keys) for
// a value of type t: it walks body beside t and returns the first value that does not fit,
// by its JSON path. encoding/json's own errors name Go types ("cannot unmarshal string into
// Go struct field holdBody.seats of type int"), leave array indexes out of the path, and
// carry no path at all for an unknown field; the walk costs a second read of the body, on
// the failing path only. cause is encoding/json's error, kept for the log.
func mismatch(body []byte, t reflect.Type, cause error) error {
	w := walker{dec: json.NewDecoder(bytes.NewReader(body))}
	w.dec.UseNumber()
	if e := w.value(t, ""); e != nil {
		e.Err = cause
		return e
	}
	// The walk and encoding/json disagree; say what encoding/json says, in JSON terms.
	if typeErr, ok := errors.AsType[*json.UnmarshalTypeError](cause); ok {
		e := at(typeErr.Field, "want %s", expect(typeErr.Type))
		e.Err = cause
		return e
	}
	return &problem.Error{Code: problem.Invalid, Message: "request body does not have the expected shape", Err: cause}
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	timeType            = reflect.TypeFor[time.Time]()
	numberType          = reflect.TypeFor[json.Number]()
)

// walker reads the tokens of a body, as encoding/json would decode them.
type walker struct {
	dec *json.Decoder
}

// value reads the next value, to be decoded into a t at path, and returns the first problem
// in it, or nil.
func (w *walker) value(t reflect.Type, path string) *problem.Error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshalerType) {
		var raw json.RawMessage
		if err := w.dec.Decode(&raw); err != nil || t.Kind() == reflect.Interface || isNull(raw) {
			return nil
		}
		err := reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(raw)
		return refused(t, path, err)
	}
	tok, err := w.dec.Token()
	if err != nil || tok == nil { // null fits anything
		return nil
	}
	if reflect.PointerTo(t).Implements(textUnmarshalerType) {
		s, ok := tok.(string)
		if !ok {
			return at(path, "want %s, got %s", expect(t), kind(tok))
		}
		return refused(t, path, reflect.New(t).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)))
	}
	switch tok := tok.(type) {
	case json.Delim:
		switch {
		case tok == '{' && (t.Kind() == reflect.Struct || t.Kind() == reflect.Map):
			return w.members(t, path)
		case tok == '[' && (t.Kind() == reflect.Array || t.Kind() == reflect.Slice && !isBytes(t)):
			return w.array(t, path)
		}
	case string:
		switch {
		case t == numberType:
			if _, err := strconv.ParseFloat(tok, 64); err != nil {
				return at(path, "want a number")
			}
			return nil
		case t.Kind() == reflect.String:
			return nil
		case isBytes(t):
			if _, err := base64.StdEncoding.DecodeString(tok); err != nil {
				return at(path, "want %s", expect(t))
			}
			return nil
		}
	case json.Number:
		return number(t, path, string(tok))
	case bool:
		if t.Kind() == reflect.Bool {
			return nil
		}
	}
	return at(path, "want %s, got %s", expect(t), kind(tok))
}

// members reads the members of an object decoded into struct or map type t, its '{' read.
func (w *walker) members(t reflect.Type, path string) *problem.Error {
	for {
		tok, err := w.dec.Token()
		if err != nil || tok == json.Delim('}') {
			return nil
		}
		key, _ := tok.(string)
		field := joinPath(path, keyPath([]byte(key)))
		mt, e := memberType(t, field, key)
		if e == nil {
			e = w.value(mt, field)
		}
		if e != nil {
			return e
		}
	}
}

// memberType is the type of the member key of an object decoded into struct or map type t,
// or the problem with key: no field of that name, or a map key of the wrong form.
func memberType(t reflect.Type, field, key string) (reflect.Type, *problem.Error) {
	if t.Kind() == reflect.Map {
		return t.Elem(), mapKey(t.Key(), field, key)
	}
	ft, ok := jsonField(t, key)
	if !ok {
		return nil, at(field, "unknown field")
	}
	return ft, nil
}

// array reads the elements of an array decoded into slice or array type t, its '[' read.
// encoding/json drops the elements past an array's length unread; so does the walk.
func (w *walker) array(t reflect.Type, path string) *problem.Error {
	for i := 0; w.dec.More(); i++ {
		if t.Kind() == reflect.Array && i >= t.Len() {
			var skip json.RawMessage
			if err := w.dec.Decode(&skip); err != nil {
				return nil
			}
			continue
		}
		if e := w.value(t.Elem(), path+"["+strconv.Itoa(i)+"]"); e != nil {
			return e
		}
	}
	_, _ = w.dec.Token() // ]
	return nil
}

// mapKey checks a map key: a string key fits any string-kinded key type; an integer key
// type wants digits, as encoding/json parses them.
func mapKey(t reflect.Type, path, key string) *problem.Error {
	switch {
	case t.Kind() == reflect.String:
		return nil
	case reflect.PointerTo(t).Implements(textUnmarshalerType):
		return refused(t, path, reflect.New(t).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(key)))
	}
	if e := number(t, path, key); e != nil {
		return at(path, "want a key that is %s", expect(t))
	}
	return nil
}

// number checks the number s (as written in the body) for a value of type t: a whole number
// in range for an integer, a finite one in range for a float.
func number(t reflect.Type, path, s string) *problem.Error {
	var err error
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		_, err = strconv.ParseInt(s, 10, t.Bits())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		_, err = strconv.ParseUint(s, 10, t.Bits())
		if err != nil && strings.HasPrefix(s, "-") && !strings.ContainsAny(s, ".eE") {
			err = strconv.ErrRange
		}
	case reflect.Float32, reflect.Float64:
		_, err = strconv.ParseFloat(s, t.Bits())
	case reflect.String:
		if t == numberType {
			return nil
		}
		return at(path, "want %s, got a number", expect(t))
	default:
		return at(path, "want %s, got a number", expect(t))
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, strconv.ErrRange):
		return at(path, "want %s", numberRange(t))
	}
	return at(path, "want %s, without a fraction or an exponent", expect(t))
}

// numberRange is what a number of type t may be, bounds included.
func numberRange(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number from " + strconv.FormatInt(-1<<(t.Bits()-1), 10) + " to " + strconv.FormatInt(1<<(t.Bits()-1)-1, 10)
	case reflect.Float32:
		return "a number from -3.4e38 to 3.4e38"
	case reflect.Float64:
		return "a number from -1.7e308 to 1.7e308"
	}
	return "a whole number from 0 to " + strconv.FormatUint(1<<t.Bits()-1, 10)
}

// refused turns the error of a type's own UnmarshalJSON or UnmarshalText into a problem at
// path, or nil when there is none. Its text is shown only when it is a problem itself: a
// type's own error may name Go types or repeat the value.
func refused(t reflect.Type, path string, err error) *problem.Error {
	if err == nil {
		return nil
	}
	if p, ok := errors.AsType[*problem.Error](err); ok && p.Code == problem.Invalid {
		return at(path, "%s", p.Message)
	}
	if typeErr, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && typeErr.Type != nil {
		return at(path, "want %s", expect(typeErr.Type))
	}
	return at(path, "want %s", expect(t))
}

// expect says in JSON terms what a value of type t must be.
func expect(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return "a date and time such as 2026-05-01T20:00:00Z (RFC 3339)"
	case t == numberType:
		return "a number"
	case t.Kind() == reflect.Interface:
		return "any JSON value"
	case reflect.PointerTo(t).Implements(unmarshalerType):
		return "a value this field accepts"
	case reflect.PointerTo(t).Implements(textUnmarshalerType):
		return "a string this field accepts"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice:
		if isBytes(t) {
			return "a base64 string"
		}
		return "an array"
	case reflect.Array:
		return "an array"
	}
	return "a value this field accepts"
}

// kind names the JSON kind of the token a value starts with.
func kind(tok json.Token) string {
	switch tok := tok.(type) {
	case json.Delim:
		if tok == '{' {
			return "an object"
		}
		return "an array"
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "null"
}

// isBytes reports whether t is a byte slice, which encoding/json reads as a base64 string.
func isBytes(t reflect.Type) bool {
	return t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 &&
		!reflect.PointerTo(t.Elem()).Implements(unmarshalerType) && !reflect.PointerTo(t.Elem()).Implements(textUnmarshalerType)
}

func isNull(raw []byte) bool { return string(raw) == "null" }

// jsonField returns the type of the field of struct type t that encoding/json fills from
// key: the field of that name, else one whose name matches it regardless of case, as
// encoding/json matches. Fields of embedded structs are looked at after t's own, level by
// level, as Go promotes them.
func jsonField(t reflect.Type, key string) (reflect.Type, bool) {
	var folded reflect.Type
	seen := map[reflect.Type]bool{}
	for level := []reflect.Type{t}; len(level) > 0; {
		var next []reflect.Type
		for _, st := range level {
			if seen[st] {
				continue
			}
			seen[st] = true
			for i := range st.NumField() {
				f := st.Field(i)
				name, ok := jsonName(f)
				switch {
				case !ok:
				case name == "": // an embedded struct: its fields are promoted
					ft := f.Type
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					next = append(next, ft)
				case name == key:
					return f.Type, true
				case folded == nil && strings.EqualFold(name, key):
					folded = f.Type
				}
			}
		}
		level = next
	}
	return folded, folded != nil
}

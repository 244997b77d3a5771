package limits

import (
	"encoding/json"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"unicode"

	"boxoffice.dev/gateway/authn"
)

// decoded is what a service reads into a string field tagged name from body: what
// httpapi.DecodeJSON does (a json.Decoder, first value only), its errors ignored, because
// encoding/json fills what it can before reporting a type error.
func decoded(t *testing.T, name, body string) string {
	t.Helper()
	typ := reflect.StructOf([]reflect.StructField{{
		Name: "Field", Type: reflect.TypeFor[string](), Tag: reflect.StructTag(`json:"` + name + `"`),
	}})
	v := reflect.New(typ)
	_ = json.NewDecoder(strings.NewReader(body)).Decode(v.Interface())
	return v.Elem().Field(0).String()
}

// jsonFieldCases are bodies a client may send to smuggle a field past the gateway, with the
// field name the key reads.
var jsonFieldCases = []struct {
	name, field, body string
}{
	{"exact", "email", `{"email":"victim@x.org","password":"p"}`},
	{"title case", "email", `{"Email":"victim@x.org","password":"p"}`},
	{"upper case", "email", `{"EMAIL":"victim@x.org"}`},
	{"mixed case", "email", `{"eMaIl":"victim@x.org"}`},
	{"exact then folded: the last wins", "email", `{"email":"rot1@x.org","EMAIL":"victim@x.org","password":"p"}`},
	{"folded then exact: the last wins", "email", `{"EMAIL":"rot1@x.org","email":"victim@x.org"}`},
	{"duplicate exact names", "email", `{"email":"rot1@x.org","email":"victim@x.org"}`},
	{"escaped name", "email", `{"\u0065mail":"victim@x.org"}`},
	{"escaped value", "email", `{"email":"victim\u0040x.org"}`},
	{"later null keeps the string", "email", `{"email":"victim@x.org","Email":null}`},
	{"later number keeps the string", "email", `{"email":"victim@x.org","Email":5}`},
	{"later bool keeps the string", "email", `{"email":"victim@x.org","EMAIL":true}`},
	{"later object keeps the string", "email", `{"email":"victim@x.org","Email":{"email":"rot1@x.org"}}`},
	{"later array keeps the string", "email", `{"email":"victim@x.org","Email":["rot1@x.org"]}`},
	{"number only", "email", `{"email":5}`},
	{"null only", "email", `{"email":null}`},
	{"object only", "email", `{"email":{"email":"victim@x.org"}}`},
	{"nested field does not count", "email", `{"user":{"email":"victim@x.org"}}`},
	{"nested then top level", "email", `{"user":{"email":"rot1@x.org"},"email":"victim@x.org"}`},
	{"array body", "email", `[{"email":"victim@x.org"}]`},
	{"string body", "email", `"victim@x.org"`},
	{"not JSON", "email", `email=victim@x.org`},
	{"cut off", "email", `{"email":"victim@x.org"`},
	{"syntax error after the field", "email", `{"email":"victim@x.org",}`},
	{"data after the value", "email", `{"email":"victim@x.org"} {"email":"rot1@x.org"}`},
	{"closing brace after the value", "email", `{"email":"victim@x.org"}}`},
	{"leading space", "email", " \n\t{\"email\":\"victim@x.org\"}"},
	{"empty", "email", ``},
	{"empty object", "email", `{}`},
	{"prefix of the name", "email", `{"emai":"victim@x.org","emails":"rot1@x.org"}`},
	{"invalid UTF-8 in the value", "email", "{\"email\":\"vict\xffim@x.org\"}"},
	{"Kelvin sign folds to k", "skin", `{"s\u212Ain":"victim"}`},
	{"long s folds to s", "skin", `{"\u017Fkin":"victim"}`},
	{"long s and Kelvin sign, after the exact name", "skin", `{"skin":"rot1","\u017F\u212AIN":"victim"}`},
	{"Kelvin sign in the policy's name", "\u212Aey", `{"key":"victim"}`},
	{"dotless i does not fold to i", "skin", `{"sk\u0131n":"victim"}`},
	{"sharp s does not fold to ss", "ss", `{"\u00DF":"victim"}`},
}

func TestStringFieldReadsWhatTheServiceReads(t *testing.T) {
	for _, tt := range jsonFieldCases {
		t.Run(tt.name, func(t *testing.T) {
			want := decoded(t, tt.field, tt.body)
			if got := stringField(topLevel([]byte(tt.body)), tt.field); got != want {
				t.Errorf("stringField(%s, %q) = %q, want %q (what encoding/json decodes)", tt.body, tt.field, got, want)
			}
		})
	}
}

// TestJSONKeyFollowsTheServiceRead is the audit's bypass: a login body that spells the
// field differently is keyed on the account the auth service logs in, not on nothing or on
// a decoy.
func TestJSONKeyFollowsTheServiceRead(t *testing.T) {
	snap := snapshot(t)
	victim := []built{{"login-per-account", "json:email:" + hashed("victim@x.org")}}
	tests := []struct {
		name string
		body string
		want []built
	}{
		{"exact", `{"email":"victim@x.org","password":"p"}`, victim},
		{"another case", `{"Email":"Victim@x.org","password":"p"}`, victim},
		{"decoy first", `{"email":"rot1@x.org","EMAIL":"victim@x.org","password":"p"}`, victim},
		{"decoy in a nested object", `{"email":"victim@x.org","x":{"email":"rot1@x.org"}}`, victim},
		{"not a string: no account, no key", `{"email":["victim@x.org"]}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/v1/auth/login", strings.NewReader(tt.body))
			built, err := Build(snap, Subject{Route: snap.Route("login"), Caller: authn.Caller{}, IP: netip.MustParseAddr("203.0.113.9"), Request: r})
			reqs := built.Requests
			if err != nil {
				t.Fatalf("Build() = %v, want no error", err)
			}
			if got := summary(reqs); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Build(%s) = %v, want %v", tt.body, got, tt.want)
			}
		})
	}
}

// FuzzStringField holds the gateway's read of a body field to encoding/json's on any body.
func FuzzStringField(f *testing.F) {
	for _, tt := range jsonFieldCases {
		f.Add(tt.field, tt.body)
	}
	f.Fuzz(func(t *testing.T, field, body string) {
		if !tagName(field) {
			t.Skip() // encoding/json would ignore the tag and match the Go field name
		}
		want := decoded(t, field, body)
		if got := stringField(topLevel([]byte(body)), field); got != want {
			t.Errorf("stringField(%q, %q) = %q, want %q", body, field, got, want)
		}
	})
}

// tagName reports whether encoding/json takes s as a field's JSON name (its isValidTag).
func tagName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c) && !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			return false
		}
	}
	return true
}

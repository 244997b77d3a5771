package auth

import (
	"strings"
	"testing"

	"boxoffice.dev/platform/problem"
)

// wantField fails unless err is an Invalid problem naming field.
func wantField(t *testing.T, call string, err error, field string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s = nil error, want invalid %q", call, field)
	}
	p, ok := err.(*problem.Error)
	if !ok || p.Code != problem.Invalid || p.Field != field {
		t.Fatalf("%s = %v, want an invalid problem naming %q", call, err, field)
	}
}

func TestValidateSignup(t *testing.T) {
	tests := []struct {
		name               string
		email, pass, uname string
		wantField          string // "" = valid
		wantEmail          string
	}{
		{name: "valid, normalised", email: "  Ana.Souza@Example.ORG ", pass: "correct horse", uname: " Ana ", wantEmail: "ana.souza@example.org"},
		{name: "plus addressing", email: "fan+rock@boxoffice.test", pass: "12345678", uname: "Fan", wantEmail: "fan+rock@boxoffice.test"},
		{name: "no email", pass: "12345678", uname: "A", wantField: "email"},
		{name: "no at", email: "ana.example.org", pass: "12345678", uname: "A", wantField: "email"},
		{name: "display name", email: "Ana <ana@example.org>", pass: "12345678", uname: "A", wantField: "email"},
		{name: "no dot in domain", email: "ana@localhost", pass: "12345678", uname: "A", wantField: "email"},
		{name: "too long email", email: strings.Repeat("a", 250) + "@x.org", pass: "12345678", uname: "A", wantField: "email"},
		{name: "no password", email: "a@b.co", uname: "A", wantField: "password"},
		{name: "short password", email: "a@b.co", pass: "1234567", uname: "A", wantField: "password"},
		{name: "password over bcrypt's 72 bytes", email: "a@b.co", pass: strings.Repeat("p", 73), uname: "A", wantField: "password"},
		{name: "no name", email: "a@b.co", pass: "12345678", uname: "   ", wantField: "name"},
		{name: "long name", email: "a@b.co", pass: "12345678", uname: strings.Repeat("n", 101), wantField: "name"},
		{name: "control characters in name", email: "a@b.co", pass: "12345678", uname: "A\x00B", wantField: "name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ValidateSignup(tt.email, tt.pass, tt.uname)
			if tt.wantField != "" {
				wantField(t, "ValidateSignup()", err, tt.wantField)
				return
			}
			if err != nil {
				t.Fatalf("ValidateSignup() = %v, want nil", err)
			}
			if got.Email != tt.wantEmail || got.Name != strings.TrimSpace(tt.uname) || got.Password != tt.pass {
				t.Errorf("ValidateSignup() = %+v, want email %q", got, tt.wantEmail)
			}
		})
	}
}

func TestValidateLogin(t *testing.T) {
	tests := []struct {
		name, email, pass string
		wantField         string
	}{
		{name: "any shape of email is looked up", email: "not-an-email", pass: "x"},
		{name: "no email", pass: "x", wantField: "email"},
		{name: "no password", email: "a@b.co", wantField: "password"},
		{name: "huge password", email: "a@b.co", pass: strings.Repeat("p", 1000), wantField: "password"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ValidateLogin(tt.email, tt.pass)
			if tt.wantField != "" {
				wantField(t, "ValidateLogin()", err, tt.wantField)
			} else if err != nil {
				t.Fatalf("ValidateLogin() = %v, want nil", err)
			}
		})
	}
}

func TestParsePlan(t *testing.T) {
	for _, in := range []string{"free", "partner", "internal"} {
		if p, err := ParsePlan(in); err != nil || string(p) != in {
			t.Errorf("ParsePlan(%q) = %q, %v, want %q", in, p, err, in)
		}
	}
	for _, in := range []string{"", "Free", "gold"} {
		_, err := ParsePlan(in)
		wantField(t, "ParsePlan("+in+")", err, "plan")
	}
}

func TestValidateTenantName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"ticketsrus", true}, {"fan-club-2", true}, {"ab", true},
		{"", false}, {"a", false}, {"-lead", false}, {"trail-", false}, {"Upper", false},
		{"with space", false}, {"ünï", false}, {strings.Repeat("a", 41), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateTenantName(tt.name)
			if tt.ok && err != nil {
				t.Errorf("ValidateTenantName(%q) = %v, want nil", tt.name, err)
			}
			if !tt.ok {
				wantField(t, "ValidateTenantName("+tt.name+")", err, "name")
			}
		})
	}
}

// Package config reads a process's settings from its environment.
//
// Only this package reads the environment, through a getenv function the caller passes in, so
// a test can build any configuration without touching os.Environ. Values are parsed eagerly and
// every problem is collected: a misconfigured process fails at start with one message that
// names each variable, what it held and the form it expects, instead of failing later in the
// middle of a request. A Reader also records each variable it is asked for, with its default,
// so a process can list its settings (--help) from the code that reads them.
package config

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Reader parses environment variables into typed values, remembering every error and every
// variable it was asked for (Vars). The zero value is not usable; call New. A Reader is not
// safe for concurrent use.
type Reader struct {
	getenv func(string) string
	errs   []error
	vars   []Var
}

// New returns a Reader over getenv (os.Getenv in production, a map lookup in tests). A nil
// getenv is an empty environment: every read gives its default.
func New(getenv func(string) string) *Reader {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	return &Reader{getenv: getenv}
}

// Var is a variable a Reader was asked for, as a process's --help lists it.
type Var struct {
	Name string
	// Default is the value used when the variable is unset; "" means none.
	Default string
	// Want is the form a value takes ("an integer from 1 to 64"); "" for free text.
	Want string
}

// Vars returns the variables read so far, each once, in the order they were first read.
// Reading a process's settings from an empty environment (New(nil)) lists them all with
// their defaults, without a second list that could drift from the code.
func (r *Reader) Vars() []Var { return append([]Var(nil), r.vars...) }

// Error is the error for one variable: its name, the value it held and the expected form.
type Error struct {
	Name string
	// Value is what the variable held; for a URL only its scheme and host, or Hidden (see
	// Reader.URL), since a URL may carry a password or a token.
	Value string
	Want  string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s=%q: want %s", e.Name, e.Value, e.Want)
}

// Err returns every error seen so far joined in one (nil when all values parsed).
func (r *Reader) Err() error { return errors.Join(r.errs...) }

// Fail records that variable name, read some way the Reader has no method for (a key to
// decode, say), held value where want was expected. Pass Hidden as value for a secret.
func (r *Reader) Fail(name, value, want string) {
	r.errs = append(r.errs, &Error{Name: name, Value: value, Want: want})
}

// read returns the variable's value with blanks trimmed ("" when unset) and records it among
// Vars with its default and form.
func (r *Reader) read(name, def, want string) string {
	if !slices.ContainsFunc(r.vars, func(v Var) bool { return v.Name == name }) {
		r.vars = append(r.vars, Var{Name: name, Default: def, Want: want})
	}
	return strings.TrimSpace(r.getenv(name))
}

// String returns the variable's value, or def when it is unset or empty.
func (r *Reader) String(name, def string) string {
	if v := r.read(name, def, ""); v != "" {
		return v
	}
	return def
}

// Int returns the variable as an integer within [min, max], or def when unset.
func (r *Reader) Int(name string, def, min, max int) int {
	want := fmt.Sprintf("an integer from %d to %d", min, max)
	v := r.read(name, strconv.Itoa(def), want)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min || n > max {
		r.Fail(name, v, want)
		return def
	}
	return n
}

// Float returns the variable as a number within [min, max], or def when unset.
func (r *Reader) Float(name string, def, min, max float64) float64 {
	want := fmt.Sprintf("a number from %g to %g", min, max)
	v := r.read(name, strconv.FormatFloat(def, 'g', -1, 64), want)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < min || f > max {
		r.Fail(name, v, want)
		return def
	}
	return f
}

// Bool returns the variable as a boolean (true/false, 1/0, yes/no), or def when unset.
func (r *Reader) Bool(name string, def bool) bool {
	const want = "true or false"
	v := strings.ToLower(r.read(name, strconv.FormatBool(def), want))
	switch v {
	case "":
		return def
	case "1", "true", "yes", "on":
		return true
	case "0", "false", "no", "off":
		return false
	}
	r.Fail(name, v, want)
	return def
}

// Duration returns the variable as a positive Go duration ("250ms", "5s"), or def when unset.
func (r *Reader) Duration(name string, def time.Duration) time.Duration {
	const want = "a positive duration such as 250ms or 5s"
	v := r.read(name, def.String(), want)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		r.Fail(name, v, want)
		return def
	}
	return d
}

// Addr returns the variable as a listen address host:port (host may be empty), or def.
func (r *Reader) Addr(name, def string) string {
	const want = "a listen address host:port such as 127.0.0.1:8080 or :8080"
	v := cmp.Or(r.read(name, def, want), def)
	if v == "" {
		return ""
	}
	if _, port, err := net.SplitHostPort(v); err != nil || !validPort(port) {
		r.Fail(name, v, want)
		return def
	}
	return v
}

// URL returns the variable as an absolute URL whose scheme is one of schemes, or def when
// unset. An empty def means "not configured" and is returned as "". The error for a rejected
// value names its scheme and host, never the rest, or prints Hidden when those cannot be
// read: a URL variable may carry a password or a token (DATABASE_URL, REDIS_URL, NATS_URL).
func (r *Reader) URL(name, def string, schemes ...string) string {
	want := "a URL with scheme " + strings.Join(schemes, ", ")
	v := cmp.Or(r.read(name, def, want), def)
	if v == "" {
		return ""
	}
	u, err := url.Parse(v)
	if err != nil || u.Host == "" && u.Opaque == "" && u.Path == "" || !slices.Contains(schemes, u.Scheme) {
		r.Fail(name, describeURL(v), want)
		return def
	}
	return v
}

// List returns the variable split on commas with blanks dropped, or def when unset.
func (r *Reader) List(name string, def []string) []string {
	v := r.read(name, strings.Join(def, ","), "a comma-separated list")
	if v == "" {
		return def
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 0 && n <= 65535
}

// Hidden stands for a value a configuration error does not print.
const Hidden = "(hidden)"

// describeURL is what an error about the rejected URL v prints: its scheme and host when both
// can be read, else Hidden. A URL variable may hold a secret anywhere: a password or a NATS
// token in the user info, a password in the query or in a keyword DSN (host=… password=…),
// and a value that does not parse hides where. The error is printed at start, into the
// container's log, so it shows only what locates the mistake; the operator has the value.
func describeURL(v string) string {
	u, err := url.Parse(v)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return Hidden
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
}

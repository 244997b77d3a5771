package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestReaderDefaultsAndValues(t *testing.T) {
	r := New(env(map[string]string{
		"N": "7", "F": "0.5", "B": "yes", "D": "250ms", "A": "127.0.0.1:9000",
		"U": "postgres://u:p@db/x", "L": "a, b,,c",
	}))
	if got := r.Int("N", 1, 0, 10); got != 7 {
		t.Errorf("Int(N) = %d, want 7", got)
	}
	if got := r.Int("MISSING", 3, 0, 10); got != 3 {
		t.Errorf("Int(MISSING) = %d, want default 3", got)
	}
	if got := r.Float("F", 0, 0, 1); got != 0.5 {
		t.Errorf("Float(F) = %v, want 0.5", got)
	}
	if got := r.Bool("B", false); !got {
		t.Errorf("Bool(B) = false, want true")
	}
	if got := r.Duration("D", time.Second); got != 250*time.Millisecond {
		t.Errorf("Duration(D) = %v, want 250ms", got)
	}
	if got := r.Addr("A", ":1"); got != "127.0.0.1:9000" {
		t.Errorf("Addr(A) = %q, want 127.0.0.1:9000", got)
	}
	if got := r.URL("U", "", "postgres"); got != "postgres://u:p@db/x" {
		t.Errorf("URL(U) = %q", got)
	}
	if got := r.List("L", nil); strings.Join(got, "|") != "a|b|c" {
		t.Errorf("List(L) = %q, want [a b c]", got)
	}
	if err := r.Err(); err != nil {
		t.Fatalf("Err() = %v, want nil", err)
	}
}

func TestReaderErrorsNameVariableAndForm(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		read  func(r *Reader)
		want  string
		value string
	}{
		{"int", map[string]string{"WORKERS": "many"}, func(r *Reader) { r.Int("WORKERS", 1, 1, 64) }, "an integer from 1 to 64", "many"},
		{"int range", map[string]string{"WORKERS": "100"}, func(r *Reader) { r.Int("WORKERS", 1, 1, 64) }, "an integer from 1 to 64", "100"},
		{"float", map[string]string{"ERROR_RATE": "2"}, func(r *Reader) { r.Float("ERROR_RATE", 0, 0, 1) }, "a number from 0 to 1", "2"},
		{"bool", map[string]string{"DEBUG": "maybe"}, func(r *Reader) { r.Bool("DEBUG", false) }, "true or false", "maybe"},
		{"duration", map[string]string{"SHUTDOWN_TIMEOUT": "10"}, func(r *Reader) { r.Duration("SHUTDOWN_TIMEOUT", time.Second) }, "a positive duration", "10"},
		{"addr", map[string]string{"HTTP_ADDR": "8080"}, func(r *Reader) { r.Addr("HTTP_ADDR", ":1") }, "a listen address host:port", "8080"},
		{"url scheme", map[string]string{"DATABASE_URL": "mysql://x/y"}, func(r *Reader) { r.URL("DATABASE_URL", "", "postgres") }, "a URL with scheme postgres", "mysql://x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New(env(tt.env))
			tt.read(r)
			err := r.Err()
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("Err() = %v, want a *config.Error", err)
			}
			for k := range tt.env {
				if ce.Name != k {
					t.Errorf("error names %q, want %q", ce.Name, k)
				}
			}
			if ce.Value != tt.value || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Err() = %q, want value %q and form %q", err, tt.value, tt.want)
			}
		})
	}
}

func TestReaderCollectsEveryError(t *testing.T) {
	r := New(env(map[string]string{"A": "x", "B": "y"}))
	r.Int("A", 0, 0, 1)
	r.Duration("B", time.Second)
	err := r.Err()
	if err == nil || !strings.Contains(err.Error(), "A=") || !strings.Contains(err.Error(), "B=") {
		t.Fatalf("Err() = %v, want both A and B named", err)
	}
}

// TestURLErrorHidesSecrets: the configuration error is printed at start, into the
// container's log, so a rejected URL shows its scheme and host at most, whatever form the
// secret in it takes.
func TestURLErrorHidesSecrets(t *testing.T) {
	postgres := []string{"postgres", "postgresql"}
	tests := []struct {
		name, env, value string
		schemes          []string
		secret, shown    string
	}{
		{"password, wrong scheme", "DATABASE_URL", "mysql://app:S3cretPw@db/x", postgres, "S3cretPw", "mysql://db"},
		{"user only, wrong scheme", "DATABASE_URL", "mysql://S3cretUser@db/x", postgres, "S3cretUser", "mysql://db"},
		{"password in the query", "DATABASE_URL", "mysql://db/x?password=S3cretPw", postgres, "S3cretPw", "mysql://db"},
		{"keyword DSN", "DATABASE_URL", "host=db user=app password=S3cretPw dbname=order", postgres, "S3cretPw", Hidden},
		{"bare percent in password", "DATABASE_URL", "postgres://app:S3cret%Pw@db:5432/order", postgres, "S3cret%Pw", Hidden},
		{"nats token, scheme typo", "NATS_URL", "nat://S3cretToken@nats:4222", []string{"nats", "tls"}, "S3cretToken", "nat://nats:4222"},
		{"redis password, no colon after the scheme", "REDIS_URL", "redis//:S3cretPw@redis:6379", []string{"redis", "rediss"}, "S3cretPw", Hidden},
		{"no host", "REDIS_URL", "redis:S3cretPw", []string{"rediss"}, "S3cretPw", Hidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New(env(map[string]string{tt.env: tt.value}))
			if got := r.URL(tt.env, "", tt.schemes...); got != "" {
				t.Errorf("URL(%s) = %q, want \"\" (rejected)", tt.env, got)
			}
			err := r.Err()
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("Err() = %v, want a *config.Error", err)
			}
			if strings.Contains(err.Error(), tt.secret) {
				t.Errorf("Err() = %q, want %q hidden", err, tt.secret)
			}
			if ce.Value != tt.shown {
				t.Errorf("Err().Value = %q, want %q", ce.Value, tt.shown)
			}
		})
	}
}

func TestLoadProcess(t *testing.T) {
	r := New(env(map[string]string{"HTTP_ADDR": "127.0.0.1:9101", "SHUTDOWN_TIMEOUT": "2s"}))
	p := LoadProcess(r, "catalog", ":8081", "")
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if p.HTTPAddr != "127.0.0.1:9101" || p.ShutdownTimeout != 2*time.Second || p.DataDir != ".boxoffice" || p.Name != "catalog" {
		t.Errorf("LoadProcess = %+v", p)
	}
}

// Vars lists every variable read, once, in reading order, with its default and form: what a
// process's --help prints, read from the code that uses the values.
func TestReaderVars(t *testing.T) {
	r := New(env(map[string]string{"WORKERS": "3"}))
	r.String("NAME", "catalog")
	r.Int("WORKERS", 1, 1, 64)
	r.Duration("TIMEOUT", 5*time.Second)
	r.URL("DATABASE_URL", "", "postgres")
	r.List("PEERS", []string{"a", "b"})
	r.Bool("DEBUG", false)
	r.Float("RATE", 0.5, 0, 1)
	r.Addr("HTTP_ADDR", ":8080")
	r.String("NAME", "read again")
	want := []Var{
		{"NAME", "catalog", ""},
		{"WORKERS", "1", "an integer from 1 to 64"},
		{"TIMEOUT", "5s", "a positive duration such as 250ms or 5s"},
		{"DATABASE_URL", "", "a URL with scheme postgres"},
		{"PEERS", "a,b", "a comma-separated list"},
		{"DEBUG", "false", "true or false"},
		{"RATE", "0.5", "a number from 0 to 1"},
		{"HTTP_ADDR", ":8080", "a listen address host:port such as 127.0.0.1:8080 or :8080"},
	}
	if got := r.Vars(); !slices.Equal(got, want) {
		t.Errorf("Vars() =\n%v\nwant\n%v", got, want)
	}
}

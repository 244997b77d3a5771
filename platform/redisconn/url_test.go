package redisconn

import (
	"slices"
	"testing"
	"time"
)

func TestParseClusterURL(t *testing.T) {
	tests := []struct {
		name         string
		url          string
		wantAddrs    []string
		wantPassword string
		wantDial     time.Duration
		wantTLS      bool
		wantErr      bool
	}{
		{name: "seeds", url: "redis+cluster://10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000",
			wantAddrs: []string{"10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000"}},
		{name: "password and options", url: "redis+cluster://:s3cret@a:7000,b:7001/?dial_timeout=2s",
			wantAddrs: []string{"a:7000", "b:7001"}, wantPassword: "s3cret", wantDial: 2 * time.Second},
		{name: "tls", url: "rediss+cluster://a:7000", wantAddrs: []string{"a:7000"}, wantTLS: true},
		{name: "no hosts", url: "redis+cluster://", wantErr: true},
		{name: "database number", url: "redis+cluster://a:7000/1", wantErr: true},
		{name: "unknown option", url: "redis+cluster://a:7000?colour=blue", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseClusterURL(tt.url)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("parseClusterURL(%q) = %+v, want an error", tt.url, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseClusterURL(%q): %v", tt.url, err)
			}
			if !slices.Equal(got.Addrs, tt.wantAddrs) {
				t.Errorf("parseClusterURL(%q).Addrs = %v, want %v", tt.url, got.Addrs, tt.wantAddrs)
			}
			if got.Password != tt.wantPassword {
				t.Errorf("parseClusterURL(%q).Password = %q, want %q", tt.url, got.Password, tt.wantPassword)
			}
			if tt.wantDial != 0 && got.DialTimeout != tt.wantDial {
				t.Errorf("parseClusterURL(%q).DialTimeout = %v, want %v", tt.url, got.DialTimeout, tt.wantDial)
			}
			if gotTLS := got.TLSConfig != nil; gotTLS != tt.wantTLS {
				t.Errorf("parseClusterURL(%q) TLS = %v, want %v", tt.url, gotTLS, tt.wantTLS)
			}
		})
	}
}

func TestRedactedURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"redis://:pw@h:6379/0", "redis://:xxxxx@h:6379/0"},
		{"redis://user:pw@h:6379/0?dial_timeout=1s", "redis://user:xxxxx@h:6379/0?dial_timeout=1s"},
		{"redis://h:6379/0", "redis://h:6379/0"},
		{"redis://user@h:6379", "redis://user@h:6379"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := redactedURL(tt.in); got != tt.want {
				t.Errorf("redactedURL(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

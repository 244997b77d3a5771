package playground

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxoffice.dev/platform/config"
	"boxoffice.dev/platform/testkit"
)

// TestPagesAreServed runs the playground process and fetches what a browser fetches first.
func TestPagesAreServed(t *testing.T) {
	p := testkit.RunProcess(t, Run, nil)
	tests := []struct {
		path        string
		contentType string
		contains    string
	}{
		{"/", "text/html", `<script type="module" src="runner.js">`},
		{"/lab.html", "text/html", `<script type="module" src="lab.js">`},
		{"/runner.js", "text/javascript", "new EventSource("},
		{"/vendor/uplot/uPlot.esm.js", "text/javascript", "export { uPlot as default }"},
		{"/vendor/uplot/uPlot.min.css", "text/css", ".uplot"},
		{"/traces/boundary.trace", "", "0.90,alice"},
		{"/api/scenarios", "application/json", `"name":"rate-limiter"`},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp, err := http.Get(p.HTTPURL + tt.path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), tt.contentType) || !strings.Contains(string(b), tt.contains) {
				t.Errorf("GET %s = %d %q, want 200 %s containing %q", tt.path, resp.StatusCode, resp.Header.Get("Content-Type"), tt.contentType, tt.contains)
			}
			if !strings.HasPrefix(tt.path, "/api/") && !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
				t.Errorf("GET %s Content-Security-Policy = %q, want default-src 'self' (nothing from elsewhere)", tt.path, resp.Header.Get("Content-Security-Policy"))
			}
		})
	}
}

func TestTargetPrefersTheEndpointsFile(t *testing.T) {
	dir := t.TempDir()
	written := filepath.Join(dir, "endpoints.json")
	if err := os.WriteFile(written, []byte(`{"gateway":"http://127.0.0.1:8080/","admin":{"url":"http://127.0.0.1:9080","token":"t"},"nats":"nats://127.0.0.1:4222","services":{"catalog":["http://127.0.0.1:8102"]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"GATEWAY_URL": "http://gw:8080", "ADMIN_ADDR": "gw:9080", "ADMIN_TOKEN": "secret", "NATS_URL": "nats://nats:4222",
		"UPSTREAM_CATALOG": "http://catalog-1:8102,http://catalog-2:8102", "UPSTREAM_BFF_WEB": "http://bff-web:8112",
	}
	tests := []struct {
		name        string
		dataDir     string
		env         map[string]string
		wantGateway string
		wantAdmin   string
		wantCatalog int
		wantErr     string
	}{
		{"the file up wrote", dir, env, "http://127.0.0.1:8080", "http://127.0.0.1:9080", 1, ""},
		{"the environment without a file", t.TempDir(), env, "http://gw:8080", "http://gw:9080", 2, ""},
		{"neither", t.TempDir(), nil, "", "", 0, "no system to drive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := config.New(func(k string) string { return tt.env[k] })
			cfg := loadConfig(r, tt.dataDir)
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			got, err := cfg.target()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("target() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got.Gateway != tt.wantGateway || got.Admin != tt.wantAdmin || len(got.Services["catalog"]) != tt.wantCatalog {
				t.Errorf("target() = gateway %q admin %q catalog %v, %v; want %q, %q, %d instances", got.Gateway, got.Admin, got.Services["catalog"], err, tt.wantGateway, tt.wantAdmin, tt.wantCatalog)
			}
		})
	}
}

package admin

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// The token is read as the public side reads a bearer token: the scheme in any case, the
// token past any spaces; anything else about it must match exactly.
func TestAdminTokenSpelling(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		header string
		want   int
	}{
		{"Bearer s3cret", http.StatusOK},
		{"bearer s3cret", http.StatusOK},
		{"Bearer  s3cret", http.StatusOK},
		{"Bearer s3cre", http.StatusUnauthorized},
		{"Basic s3cret", http.StatusUnauthorized},
		{"Bearers3cret", http.StatusUnauthorized},
		{"s3cret", http.StatusUnauthorized},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest("GET", f.srv.URL+"/admin/limits", nil)
		req.Header.Set("Authorization", tt.header)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("Authorization %q = %d, want %d", tt.header, resp.StatusCode, tt.want)
		}
	}
}

func TestGenerateTokenWritesAFileOnlyItsOwnerReads(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	token, path, err := GenerateToken(dir)
	if err != nil {
		t.Fatalf("GenerateToken(%s) = %v, want nil", dir, err)
	}
	if want := filepath.Join(dir, TokenFile); path != want {
		t.Errorf("GenerateToken path = %s, want %s", path, want)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(data); token == "" || got != token+"\n" {
		t.Errorf("token file holds %q, want the token %q and a newline", got, token)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Errorf("token file mode = %v, want 0600", mode)
	}
	again, _, err := GenerateToken(dir)
	if err != nil || again == token {
		t.Errorf("second GenerateToken = %q, %v; want a new token, nil", again, err)
	}
}

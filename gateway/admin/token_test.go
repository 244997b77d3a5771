package admin

import (
	"net/http"
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

package search

import "testing"

func TestConsumerName(t *testing.T) {
	tests := []struct{ host, addr, want string }{
		{"web-1", ":8103", "search-web-1-8103"},
		{"box.local", "127.0.0.1:18103", "search-box_local-18103"}, // '.' is not allowed in a durable name
		{"", "[::1]:9000", "search--9000"},
	}
	for _, tt := range tests {
		if got := ConsumerName(tt.host, tt.addr); got != tt.want {
			t.Errorf("ConsumerName(%q, %q) = %q, want %q", tt.host, tt.addr, got, tt.want)
		}
	}
}

package natsconn

import "testing"

// A NATS URL reaches the logs without its secret, whatever the form.
func TestRedacted(t *testing.T) {
	tests := []struct{ in, want string }{
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"nats://app:s3cret@nats:4222", "nats://app:xxxxx@nats:4222"},
		{"nats://a:s3cret@n1:4222, nats://a:s3cret@n2:4222", "nats://a:xxxxx@n1:4222,nats://a:xxxxx@n2:4222"},
		{"nats://s3cret-token@nats:4222", "nats://xxxxx@nats:4222"},
		{"nats://a:s3cret@[bad", "(unparsable URL)"},
	}
	for _, tt := range tests {
		if got := redacted(tt.in); got != tt.want {
			t.Errorf("redacted(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

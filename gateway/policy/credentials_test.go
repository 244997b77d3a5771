package policy

import (
	"errors"
	"testing"
)

// Authentication removes X-Api-Key before the limits read the request: a limit counting by
// that header would count nothing, so it is refused in favour of key apikey.
func TestLimitByAPIKeyHeaderIsRefused(t *testing.T) {
	tests := []struct {
		key string
		ok  bool
	}{
		{"header:X-Api-Key", false},
		{"header:x-api-key", false},
		{"route+header:X-API-KEY", false},
		{"apikey", true},
		{"header:X-Client-Version", true},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			err := ValidateLimit("", Limit{ID: "l", Key: tt.key, Algorithm: "token_bucket", Rate: "10/1m", OnStoreFailure: "open", Mode: "enforce"})
			fe, isField := errors.AsType[*FieldError](err)
			switch {
			case tt.ok && err != nil:
				t.Errorf("ValidateLimit(key %s) = %v, want nil", tt.key, err)
			case !tt.ok && (!isField || fe.Field != "key"):
				t.Errorf("ValidateLimit(key %s) = %v, want an error naming key", tt.key, err)
			}
		})
	}
}

package money

import (
	"encoding/json"
	"testing"
)

func TestString(t *testing.T) {
	tests := []struct {
		in   Money
		want string
	}{
		{Money{Currency: "BRL", Minor: 12550}, "BRL 125.50"},
		{Money{Currency: "EUR", Minor: 5}, "EUR 0.05"},
		{Money{Currency: "USD", Minor: 100}, "USD 1.00"},
		{Money{Currency: "BRL", Minor: -250}, "BRL -2.50"},
	}
	for _, tt := range tests {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestJSON holds the wire shape the REST APIs and events carry.
func TestJSON(t *testing.T) {
	b, err := json.Marshal(Money{Currency: "BRL", Minor: 12550})
	if want := `{"currency":"BRL","minor":12550}`; err != nil || string(b) != want {
		t.Errorf("json.Marshal(BRL 125.50) = %s, %v; want %s", b, err, want)
	}
}

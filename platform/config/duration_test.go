package config

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestDurationText(t *testing.T) {
	var v struct {
		D Duration `json:"d"`
	}
	if err := json.Unmarshal([]byte(`{"d":"250ms"}`), &v); err != nil || v.D.D() != 250*time.Millisecond {
		t.Fatalf("unmarshal 250ms = %v, %v; want 250ms", v.D.D(), err)
	}
	b, _ := json.Marshal(v)
	if string(b) != `{"d":"250ms"}` {
		t.Errorf("marshal = %s, want {\"d\":\"250ms\"}", b)
	}
	if err := json.Unmarshal([]byte(`{"d":"soon"}`), &v); err == nil || !strings.Contains(err.Error(), "250ms or 5s") {
		t.Errorf("unmarshal soon = %v, want an error naming the expected form", err)
	}
}

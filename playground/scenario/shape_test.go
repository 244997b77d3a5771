package scenario

import (
	"encoding/json"
	"testing"

	"boxoffice.dev/gateway/policy"
)

// TestShapeLimit: the queue knob turns the scenario's limit into a gcra whose queue holds the
// burst knob's requests, which the gateway's own validation accepts; off leaves it as it was.
func TestShapeLimit(t *testing.T) {
	for _, tt := range []struct {
		name, queue, maxDelay string
		want                  string // the limit as the admin API gets it
	}{
		{"off", "off", "1s", `{"id":"lim","key":"route","algorithm":"token_bucket","rate":"40/s","burst":20}`},
		{"delay", "delay", "1s", `{"id":"lim","key":"route","algorithm":"gcra","rate":"40/s","queue":{"size":20,"max_delay":"1s"}}`},
		{"delay bounded by the size", "delay", "0s", `{"id":"lim","key":"route","algorithm":"gcra","rate":"40/s","queue":{"size":20}}`},
		{"nodelay", "nodelay", "1s", `{"id":"lim","key":"route","algorithm":"gcra","rate":"40/s","queue":{"size":20,"nodelay":true}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := adminLimit{ID: "lim", Key: "route", Algorithm: "token_bucket", Rate: "40/s", Burst: 20}
			shapeLimit(&l, tt.queue, 20, tt.maxDelay)
			b, err := json.Marshal(l)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("limit = %s, want %s", b, tt.want)
			}
			var pl policy.Limit
			if err := json.Unmarshal(b, &pl); err != nil {
				t.Fatal(err)
			}
			pl.Mode, pl.OnStoreFailure = "enforce", "open" // the defaults the gateway gives a limit
			if err := policy.ValidateLimit("", pl); err != nil {
				t.Errorf("the gateway refuses the limit: %v", err)
			}
		})
	}
}

package scenario

import (
	"encoding/json"
	"testing"
)

// TestShapeLimit: the queue knob turns the scenario's limit into a gcra whose queue holds the
// burst knob's requests, in the policy's words (policy.Queue); off leaves it as it was. The
// shaping profile of scenarios/rate-limiter.yaml runs it against a real gateway.
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
		})
	}
}

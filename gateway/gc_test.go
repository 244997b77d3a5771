package gateway

import (
	"runtime/debug"
	"testing"
)

func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	tests := []struct {
		name string
		gogc string
		want int
	}{
		{"unset: the gateway's default", "", DefaultGOGC},
		{"set: the environment wins", "150", 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			debug.SetGCPercent(100) // what the runtime would have read from GOGC
			TuneGC(func(k string) string {
				if k == "GOGC" {
					return tt.gogc
				}
				return ""
			})
			if got := debug.SetGCPercent(100); got != tt.want {
				t.Errorf("GC percent after TuneGC with GOGC=%q = %d, want %d", tt.gogc, got, tt.want)
			}
		})
	}
}

package config

import (
	"fmt"
	"time"
)

// Duration is a time.Duration written as "250ms" or "5s" in YAML and JSON files (policies,
// scenarios), where a bare time.Duration would be an unreadable count of nanoseconds.
type Duration time.Duration

// D is d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalText writes d as a Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("want a duration such as 250ms or 5s, got %q", b)
	}
	*d = Duration(v)
	return nil
}

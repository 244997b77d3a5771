package keyset_test

import (
	"errors"
	"slices"
	"testing"

	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb/keyset"
)

func TestSize(t *testing.T) {
	tests := []struct {
		in, want int
		bad      bool
	}{{0, 20, false}, {1, 1, false}, {100, 100, false}, {101, 0, true}, {-1, 0, true}}
	for _, tt := range tests {
		got, err := keyset.Size(tt.in, 20, 100)
		if got != tt.want || (err != nil) != tt.bad {
			t.Errorf("Size(%d, 20, 100) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.bad)
		}
		if pe, ok := errors.AsType[*problem.Error](err); tt.bad && (!ok || pe.Field != "limit") {
			t.Errorf("Size(%d, 20, 100) = %v, want a problem naming limit", tt.in, err)
		}
	}
}

func TestTrim(t *testing.T) {
	key := func(n int) keyset.Cursor { return keyset.Cursor{Key: int64(n), ID: "x"} }
	tests := []struct {
		name     string
		rows     []int
		limit    int
		want     []int
		wantNext string
	}{
		{"no rows", nil, 2, nil, ""},
		{"fewer than a page", []int{1}, 2, []int{1}, ""},
		{"exactly a page: the last", []int{1, 2}, 2, []int{1, 2}, ""},
		{"one more: another page follows", []int{1, 2, 3}, 2, []int{1, 2}, key(2).String()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, next := keyset.Trim(tt.rows, tt.limit, key)
			if !slices.Equal(got, tt.want) || next != tt.wantNext {
				t.Errorf("Trim(%v, %d) = %v, %q; want %v, %q", tt.rows, tt.limit, got, next, tt.want, tt.wantNext)
			}
		})
	}
}

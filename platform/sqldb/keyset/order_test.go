package keyset_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb/keyset"
)

func TestOrderSQL(t *testing.T) {
	c := keyset.Cursor{Key: 7, ID: "ord_1"}
	tests := []struct {
		order            keyset.Order
		wantCond, wantBy string
	}{
		{keyset.Order{Key: "created_us", Desc: true}, "(created_us < ? OR (created_us = ? AND id < ?))", "created_us DESC, id DESC"},
		{keyset.Order{Key: "starts_at"}, "(starts_at > ? OR (starts_at = ? AND id > ?))", "starts_at, id"},
	}
	for _, tt := range tests {
		cond, args := tt.order.After(c)
		if cond != tt.wantCond || fmt.Sprint(args) != "[7 7 ord_1]" {
			t.Errorf("%+v.After(%v) = %q, %v; want %q, [7 7 ord_1]", tt.order, c, cond, args, tt.wantCond)
		}
		if got := tt.order.By(); got != tt.wantBy {
			t.Errorf("%+v.By() = %q, want %q", tt.order, got, tt.wantBy)
		}
	}
}

func TestOrderRead(t *testing.T) {
	newest, oldest := keyset.Order{Key: "k", Desc: true}, keyset.Order{Key: "k"}
	next := keyset.Cursor{Key: 5, ID: "x"}
	tests := []struct {
		name      string
		order     keyset.Order
		limit     int
		cursor    string
		wantSize  int
		wantAfter keyset.Cursor
		wantField string // "" = no error
	}{
		{"first page newest first", newest, 0, "", 20, keyset.Cursor{Key: math.MaxInt64}, ""},
		{"first page oldest first", oldest, 3, "", 3, keyset.Cursor{Key: math.MinInt64}, ""},
		{"a next page", newest, 3, next.String(), 3, next, ""},
		{"too large a page", newest, 101, "", 0, keyset.Cursor{}, "limit"},
		{"a cursor no page gave", oldest, 3, "!!", 0, keyset.Cursor{}, "cursor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			size, after, err := tt.order.Read(tt.limit, 20, 100, tt.cursor)
			if tt.wantField != "" {
				if pe, ok := errors.AsType[*problem.Error](err); !ok || pe.Field != tt.wantField {
					t.Errorf("Read(%d, %q) = %v, want a problem naming %s", tt.limit, tt.cursor, err, tt.wantField)
				}
				return
			}
			if err != nil || size != tt.wantSize || after != tt.wantAfter {
				t.Errorf("Read(%d, %q) = %d, %v, %v; want %d, %v", tt.limit, tt.cursor, size, after, err, tt.wantSize, tt.wantAfter)
			}
		})
	}
}

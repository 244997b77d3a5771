package protoconv

import (
	"errors"
	"math"
	"slices"
	"testing"

	"boxoffice.dev/platform/problem"
	commonv1 "boxoffice.dev/proto/boxoffice/common/v1"
	inventoryv1 "boxoffice.dev/proto/boxoffice/inventory/v1"
)

// status is a GraphQL enum as gqlgen generates one.
type status string

func (s status) IsValid() bool { return s == "ACTIVE" || s == "EXPIRED" }

func TestEnum(t *testing.T) {
	for _, tc := range []struct {
		in      inventoryv1.HoldStatus
		want    status
		wantErr bool
	}{
		{inventoryv1.HoldStatus_HOLD_STATUS_ACTIVE, "ACTIVE", false},
		{inventoryv1.HoldStatus_HOLD_STATUS_EXPIRED, "EXPIRED", false},
		{inventoryv1.HoldStatus_HOLD_STATUS_UNSPECIFIED, "UNSPECIFIED", true},
		{inventoryv1.HoldStatus_HOLD_STATUS_RELEASED, "RELEASED", true}, // not in this schema
	} {
		got, err := Enum[status](tc.in, "HOLD_STATUS_")
		if (err != nil) != tc.wantErr || (err == nil && got != tc.want) {
			t.Errorf("Enum(%v) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestPage(t *testing.T) {
	after := "cursor-2"
	for _, tc := range []struct {
		name    string
		first   int
		after   *string
		want    *commonv1.PageRequest
		wantErr bool
	}{
		{"first page", 10, nil, &commonv1.PageRequest{PageSize: 10}, false},
		{"next page", 50, &after, &commonv1.PageRequest{PageSize: 50, PageToken: after}, false},
		{"none", 0, nil, nil, true},
		{"too many", 51, nil, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Page(tc.first, 50, tc.after)
			if tc.wantErr {
				if problem.CodeOf(err) != problem.Invalid {
					t.Errorf("Page(%d) = %v, want invalid", tc.first, err)
				}
				return
			}
			if err != nil || got.GetPageSize() != tc.want.GetPageSize() || got.GetPageToken() != tc.want.GetPageToken() {
				t.Errorf("Page(%d, %v) = %v, %v; want %v", tc.first, tc.after, got, err, tc.want)
			}
		})
	}
}

func TestInt32(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      int
		want    int32
		wantErr bool
	}{
		{"a quantity", 2, 2, false},
		{"zero", 0, 0, false},
		{"the largest", math.MaxInt32, math.MaxInt32, false},
		{"the smallest", math.MinInt32, math.MinInt32, false},
		{"one past the largest", math.MaxInt32 + 1, 0, true},
		{"one past the smallest", math.MinInt32 - 1, 0, true},
		{"2^32+1, which wraps to 1", 1<<32 + 1, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Int32("quantity", tc.in)
			if tc.wantErr {
				if p, ok := errors.AsType[*problem.Error](err); !ok || p.Code != problem.Invalid || p.Field != "quantity" {
					t.Errorf("Int32(%d) = %d, %v; want an invalid problem naming quantity", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("Int32(%d) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestNextCursor(t *testing.T) {
	if got := NextCursor(&commonv1.PageResponse{}); got != nil {
		t.Errorf("NextCursor(last page) = %q, want nil", *got)
	}
	if got := NextCursor(&commonv1.PageResponse{NextPageToken: "x"}); got == nil || *got != "x" {
		t.Errorf("NextCursor(x) = %v, want x", got)
	}
}

func TestAll(t *testing.T) {
	double := func(n int) (int, error) {
		if n < 0 {
			return 0, errors.New("negative")
		}
		return 2 * n, nil
	}
	if got, err := All([]int{1, 2}, double); err != nil || !slices.Equal(got, []int{2, 4}) {
		t.Errorf("All([1 2]) = %v, %v; want [2 4]", got, err)
	}
	if got, err := All(nil, double); err != nil || got == nil || len(got) != 0 {
		t.Errorf("All(nil) = %#v, %v; want an empty, non-nil slice", got, err)
	}
	if _, err := All([]int{1, -1}, double); err == nil {
		t.Error("All([1 -1]) = nil error, want the conversion's")
	}
}

func TestValue(t *testing.T) {
	s := "pista"
	if got := Value(&s); got != "pista" {
		t.Errorf("Value(&pista) = %q", got)
	}
	if got := Value[int](nil); got != 0 {
		t.Errorf("Value(nil) = %d, want 0", got)
	}
}

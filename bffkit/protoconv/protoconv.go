// Package protoconv turns the services' proto values into the BFFs' GraphQL values: enums by
// name, pages, optional strings. Each BFF keeps its own model types; what is the same for
// both is here.
package protoconv

import (
	"fmt"
	"math"
	"strings"

	"boxoffice.dev/platform/problem"
	commonv1 "boxoffice.dev/proto/boxoffice/common/v1"
)

// Enum maps a proto enum value onto the GraphQL enum of the same name without the proto's
// prefix: Enum[model.HoldStatus](inventoryv1.HoldStatus_HOLD_STATUS_ACTIVE, "HOLD_STATUS_")
// is "ACTIVE". An unspecified or unknown value is an error (a service newer than the BFF),
// never a made-up answer.
func Enum[E interface {
	~string
	IsValid() bool
}](v fmt.Stringer, prefix string) (E, error) {
	e := E(strings.TrimPrefix(v.String(), prefix))
	if !e.IsValid() {
		return e, fmt.Errorf("unknown %s%s", prefix, e)
	}
	return e, nil
}

// Page turns a list field's first and after into a page request, refusing a size outside 1
// to max as an invalid "first".
func Page(first, max int, after *string) (*commonv1.PageRequest, error) {
	if first < 1 || first > max {
		return nil, problem.InvalidField("first", "want 1 to %d", max)
	}
	p := &commonv1.PageRequest{PageSize: int32(first)}
	if after != nil {
		p.PageToken = *after
	}
	return p, nil
}

// Int32 is an Int argument as a proto int32, or an Invalid problem naming field when v is
// outside int32's range. GraphQL's Int is 32 bits, but gqlgen reads a variable into Go's int,
// and int32(v) would wrap 4294967297 to a valid-looking 1. Within the range, the service
// checks the value against its own rules.
func Int32(field string, v int) (int32, error) {
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0, problem.InvalidField(field, "%d is out of range", v)
	}
	return int32(v), nil
}

// NextCursor is where the next page starts, for a list's nextCursor; nil on the last page.
func NextCursor(page *commonv1.PageResponse) *string { return Optional(page.GetNextPageToken()) }

// Optional is s for a nullable field: nil when empty.
func Optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// All converts every message of a list, stopping at the first that fails; an empty list is
// an empty slice, never nil, as a non-null GraphQL list wants.
func All[P, M any](in []P, convert func(P) (M, error)) ([]M, error) {
	out := make([]M, 0, len(in))
	for _, p := range in {
		m, err := convert(p)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// Value is what an optional GraphQL argument holds: *p, or the zero value when absent.
func Value[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// Package protoconv turns the services' proto values into the BFFs' GraphQL values: enums by
// name, pages, optional strings. Each BFF keeps its own model types; what is the same for
// both is here.
package protoconv

import (
	"fmt"
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

// NextCursor is where the next page starts, for a list's nextCursor; nil on the last page.
func NextCursor(page *commonv1.PageResponse) *string { return Optional(page.GetNextPageToken()) }

// Optional is s for a nullable field: nil when empty.
func Optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

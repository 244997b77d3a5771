package inventory

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/sqldb/keyset"
	"boxoffice.dev/platform/testkit"
	commonv1 "boxoffice.dev/proto/boxoffice/common/v1"
	inventoryv1 "boxoffice.dev/proto/boxoffice/inventory/v1"
)

// asUser is the incoming context of a call the gateway or a BFF made for user ("" = none).
func asUser(user string) context.Context {
	md := metadata.MD{}
	if user != "" {
		md.Set(identity.HeaderUser, user)
	}
	return metadata.NewIncomingContext(context.Background(), md)
}

func TestGRPCListHolds(t *testing.T) {
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		s := newStore(t, db, newClock())
		putSeatMap(t, s, "evt-001", smallVenue)
		var mine []string
		for _, acc := range []string{"acc-1", "acc-2", "acc-1", "acc-1"} {
			h, err := s.PlaceHold(context.Background(), HoldRequest{EventID: "evt-001", Account: acc, Class: "ga-floor", Quantity: 1})
			if err != nil {
				t.Fatal(err)
			}
			if acc == "acc-1" {
				mine = append(mine, h.ID)
			}
		}
		g := &grpcServer{store: s}

		var got []string
		req := &inventoryv1.ListHoldsRequest{Page: &commonv1.PageRequest{PageSize: 2}}
		for range 3 {
			resp, err := g.ListHolds(asUser("acc-1"), req)
			if err != nil {
				t.Fatalf("ListHolds(acc-1, %v) = %v", req.GetPage(), err)
			}
			for _, h := range resp.GetHolds() {
				if h.GetAccount() != "acc-1" {
					t.Errorf("ListHolds(acc-1) returned %s of %s", h.GetId(), h.GetAccount())
				}
				got = append(got, h.GetId())
			}
			if resp.GetPage().GetNextPageToken() == "" {
				break
			}
			req.Page.PageToken = resp.GetPage().GetNextPageToken()
		}
		if !sameSet(got, mine) || len(got) != len(mine) {
			t.Errorf("ListHolds(acc-1) pages = %v, want %v", got, mine)
		}

		for _, tc := range []struct {
			name string
			ctx  context.Context
			req  *inventoryv1.ListHoldsRequest
			want codes.Code
		}{
			{"no user", asUser(""), &inventoryv1.ListHoldsRequest{}, codes.Unauthenticated},
			{"page too large", asUser("acc-1"), &inventoryv1.ListHoldsRequest{Page: &commonv1.PageRequest{PageSize: keyset.MaxPageSize + 1}}, codes.InvalidArgument},
			{"bad token", asUser("acc-1"), &inventoryv1.ListHoldsRequest{Page: &commonv1.PageRequest{PageToken: "garbage!"}}, codes.InvalidArgument},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if _, err := g.ListHolds(tc.ctx, tc.req); status.Code(err) != tc.want {
					t.Errorf("ListHolds(%v) = %v, want %v", tc.req, err, tc.want)
				}
			})
		}
	})
}

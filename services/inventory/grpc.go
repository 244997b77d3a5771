package inventory

import (
	"context"

	"google.golang.org/protobuf/types/known/timestamppb"

	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/problem"
	commonv1 "boxoffice.dev/proto/boxoffice/common/v1"
	inventoryv1 "boxoffice.dev/proto/boxoffice/inventory/v1"
)

// grpcServer serves boxoffice.inventory.v1.Inventory over the Store. The caller is the
// identity in the metadata: a user acts for themself, no user is a trusted service.
type grpcServer struct {
	inventoryv1.UnimplementedInventoryServer
	store *Store
}

var _ inventoryv1.InventoryServer = (*grpcServer)(nil)

func (g *grpcServer) GetSeatMap(ctx context.Context, req *inventoryv1.GetSeatMapRequest) (*inventoryv1.SeatMap, error) {
	m, err := g.store.SeatMap(ctx, req.GetEventId())
	if err != nil {
		return nil, problem.GRPC(err)
	}
	return seatMapToProto(m), nil
}

func (g *grpcServer) BatchGetAvailability(ctx context.Context, req *inventoryv1.BatchGetAvailabilityRequest) (*inventoryv1.BatchGetAvailabilityResponse, error) {
	counts, err := g.store.Availability(ctx, req.GetEventIds())
	if err != nil {
		return nil, problem.GRPC(err)
	}
	resp := &inventoryv1.BatchGetAvailabilityResponse{}
	for _, id := range req.GetEventIds() {
		c := counts[id]
		resp.Availability = append(resp.Availability, &inventoryv1.Availability{
			EventId: id, Level: levelToProto[c.Level()], Counts: countsToProto(c),
		})
	}
	return resp, nil
}

func (g *grpcServer) PlaceHold(ctx context.Context, req *inventoryv1.PlaceHoldRequest) (*inventoryv1.Hold, error) {
	h, err := g.store.PlaceHold(ctx, HoldRequest{
		EventID:  req.GetEventId(),
		Account:  identity.FromIncomingContext(ctx).User,
		Seats:    req.GetSeats(),
		Class:    req.GetClass(),
		Quantity: int(req.GetQuantity()),
		Pass:     req.GetAdmissionPass(),

		IdempotencyKey: req.GetIdempotencyKey(),
	})
	if err != nil {
		return nil, problem.GRPC(err)
	}
	return holdToProto(h), nil
}

func (g *grpcServer) ReleaseHold(ctx context.Context, req *inventoryv1.ReleaseHoldRequest) (*inventoryv1.Hold, error) {
	h, err := g.store.ReleaseHold(ctx, req.GetHoldId(), identity.FromIncomingContext(ctx).User)
	if err != nil {
		return nil, problem.GRPC(err)
	}
	return holdToProto(h), nil
}

func (g *grpcServer) ConfirmHold(ctx context.Context, req *inventoryv1.ConfirmHoldRequest) (*inventoryv1.Hold, error) {
	h, err := g.store.ConfirmHold(ctx, req.GetHoldId(), identity.FromIncomingContext(ctx).User)
	if err != nil {
		return nil, problem.GRPC(err)
	}
	return holdToProto(h), nil
}

func (g *grpcServer) GetHold(ctx context.Context, req *inventoryv1.GetHoldRequest) (*inventoryv1.Hold, error) {
	h, err := g.store.Hold(ctx, req.GetHoldId(), identity.FromIncomingContext(ctx).User)
	if err != nil {
		return nil, problem.GRPC(err)
	}
	return holdToProto(h), nil
}

// ListHolds is GET /v1/holds over gRPC: the calling user's holds, newest first, paged by the
// same cursor.
func (g *grpcServer) ListHolds(ctx context.Context, req *inventoryv1.ListHoldsRequest) (*inventoryv1.ListHoldsResponse, error) {
	user := identity.FromIncomingContext(ctx).User
	if user == "" {
		return nil, problem.GRPC(problem.New(problem.Unauthorized, "sign in to see or hold tickets"))
	}
	holds, next, err := g.store.ListHolds(ctx, user, int(req.GetPage().GetPageSize()), req.GetPage().GetPageToken())
	if err != nil {
		return nil, problem.GRPC(err)
	}
	resp := &inventoryv1.ListHoldsResponse{Page: &commonv1.PageResponse{NextPageToken: next}}
	for _, h := range holds {
		resp.Holds = append(resp.Holds, holdToProto(h))
	}
	return resp, nil
}

var (
	seatStatusToProto = map[SeatStatus]inventoryv1.SeatStatus{
		SeatAvailable: inventoryv1.SeatStatus_SEAT_STATUS_AVAILABLE,
		SeatHeld:      inventoryv1.SeatStatus_SEAT_STATUS_HELD,
		SeatSold:      inventoryv1.SeatStatus_SEAT_STATUS_SOLD,
	}
	holdStatusToProto = map[HoldStatus]inventoryv1.HoldStatus{
		HoldActive:    inventoryv1.HoldStatus_HOLD_STATUS_ACTIVE,
		HoldConfirmed: inventoryv1.HoldStatus_HOLD_STATUS_CONFIRMED,
		HoldReleased:  inventoryv1.HoldStatus_HOLD_STATUS_RELEASED,
		HoldExpired:   inventoryv1.HoldStatus_HOLD_STATUS_EXPIRED,
	}
	levelToProto = map[Level]inventoryv1.AvailabilityLevel{
		LevelAvailable: inventoryv1.AvailabilityLevel_AVAILABILITY_LEVEL_AVAILABLE,
		LevelLimited:   inventoryv1.AvailabilityLevel_AVAILABILITY_LEVEL_LIMITED,
		LevelSoldOut:   inventoryv1.AvailabilityLevel_AVAILABILITY_LEVEL_SOLD_OUT,
		LevelUnknown:   inventoryv1.AvailabilityLevel_AVAILABILITY_LEVEL_UNKNOWN,
	}
)

func holdToProto(h Hold) *inventoryv1.Hold {
	p := &inventoryv1.Hold{
		Id: h.ID, EventId: h.EventID, Account: h.Account, Status: holdStatusToProto[h.Status],
		Seats: h.Seats, Class: h.Class, Quantity: int32(h.Quantity),
		CreatedAt: timestamppb.New(h.CreatedAt), ExpiresAt: timestamppb.New(h.ExpiresAt),
	}
	for _, t := range h.Tickets {
		p.Tickets = append(p.Tickets, &inventoryv1.TicketCount{Class: t.Class, Quantity: int32(t.Quantity)})
	}
	return p
}

func countsToProto(c Counts) *inventoryv1.Counts {
	return &inventoryv1.Counts{Total: int32(c.Total), Available: int32(c.Available), Held: int32(c.Held), Sold: int32(c.Sold)}
}

func seatMapToProto(m SeatMap) *inventoryv1.SeatMap {
	p := &inventoryv1.SeatMap{EventId: m.EventID, FlashSale: m.FlashSale, Counts: countsToProto(m.Counts)}
	for _, sec := range m.Sections {
		ps := &inventoryv1.Section{Id: sec.ID, Class: sec.Class}
		for _, row := range sec.Rows {
			pr := &inventoryv1.Row{Label: row.Label}
			for _, st := range row.Seats {
				pr.Seats = append(pr.Seats, &inventoryv1.Seat{Id: st.ID, Number: int32(st.Number), Status: seatStatusToProto[st.Status]})
			}
			ps.Rows = append(ps.Rows, pr)
		}
		p.Sections = append(p.Sections, ps)
	}
	for _, g := range m.GA {
		p.Ga = append(p.Ga, &inventoryv1.GAClass{Class: g.Class, Counts: countsToProto(g.Counts)})
	}
	return p
}

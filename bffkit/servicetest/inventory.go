package servicetest

import (
	"context"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/problem"
	commonv1 "boxoffice.dev/proto/boxoffice/common/v1"
	inventoryv1 "boxoffice.dev/proto/boxoffice/inventory/v1"
)

// inventory serves Data's seat maps and holds. Holds never expire here.
type inventory struct {
	inventoryv1.UnimplementedInventoryServer
	d *Data
}

var _ inventoryv1.InventoryServer = (*inventory)(nil)

func (v *inventory) GetSeatMap(_ context.Context, req *inventoryv1.GetSeatMapRequest) (*inventoryv1.SeatMap, error) {
	v.d.Mu.Lock()
	defer v.d.Mu.Unlock()
	if m, ok := v.d.SeatMaps[req.GetEventId()]; ok {
		return proto.CloneOf(m), nil
	}
	return nil, notFound("seat map for event", req.GetEventId())
}

// BatchGetAvailability grades as inventory does: a tenth or less left is limited.
func (v *inventory) BatchGetAvailability(_ context.Context, req *inventoryv1.BatchGetAvailabilityRequest) (*inventoryv1.BatchGetAvailabilityResponse, error) {
	if len(req.GetEventIds()) > 100 {
		return nil, status.Error(codes.InvalidArgument, "event_ids: at most 100")
	}
	v.d.Mu.Lock()
	defer v.d.Mu.Unlock()
	resp := &inventoryv1.BatchGetAvailabilityResponse{}
	for _, id := range req.GetEventIds() {
		a := &inventoryv1.Availability{EventId: id, Level: inventoryv1.AvailabilityLevel_AVAILABILITY_LEVEL_UNKNOWN, Counts: &inventoryv1.Counts{}}
		if m, ok := v.d.SeatMaps[id]; ok {
			a.Counts = proto.CloneOf(m.Counts)
			switch c := m.Counts; {
			case c.Available == 0:
				a.Level = inventoryv1.AvailabilityLevel_AVAILABILITY_LEVEL_SOLD_OUT
			case c.Available*10 <= c.Total:
				a.Level = inventoryv1.AvailabilityLevel_AVAILABILITY_LEVEL_LIMITED
			default:
				a.Level = inventoryv1.AvailabilityLevel_AVAILABILITY_LEVEL_AVAILABLE
			}
		}
		resp.Availability = append(resp.Availability, a)
	}
	return resp, nil
}

// PlaceHold holds available seats, or GA tickets, all or nothing. A flash-sale event wants
// the pass the fake waitroom hands out ("pass-<user>"). A repeated idempotency key returns
// the user's hold placed under it, as it is now (the fake does not compare the requests).
func (v *inventory) PlaceHold(ctx context.Context, req *inventoryv1.PlaceHoldRequest) (*inventoryv1.Hold, error) {
	u, err := user(ctx)
	if err != nil {
		return nil, err
	}
	v.d.Mu.Lock()
	defer v.d.Mu.Unlock()
	key := u + "/" + req.GetIdempotencyKey()
	if id, ok := v.d.holdKeys[key]; ok {
		return proto.CloneOf(v.d.hold(id, u)), nil
	}
	m, ok := v.d.SeatMaps[req.GetEventId()]
	if !ok {
		return nil, notFound("seat map for event", req.GetEventId())
	}
	if m.FlashSale && req.GetAdmissionPass() != "pass-"+u {
		return nil, status.Error(codes.PermissionDenied, "admission_pass: join the waiting room first")
	}
	now := v.d.Now
	h := &inventoryv1.Hold{Id: v.d.newID("hold"), EventId: req.GetEventId(), Account: u, Status: inventoryv1.HoldStatus_HOLD_STATUS_ACTIVE,
		CreatedAt: timestamppb.New(now), ExpiresAt: timestamppb.New(now.Add(holdFor))}
	switch {
	case len(req.GetSeats()) > 0:
		var seats []*inventoryv1.Seat
		for _, id := range req.GetSeats() {
			st := findSeat(m, id)
			if st == nil {
				return nil, problem.GRPC(problem.InvalidField("seats", "no seat %s", id))
			}
			if st.Status != inventoryv1.SeatStatus_SEAT_STATUS_AVAILABLE {
				return nil, status.Errorf(codes.AlreadyExists, "seat %s is taken", id)
			}
			seats = append(seats, st)
		}
		for _, st := range seats {
			st.Status = inventoryv1.SeatStatus_SEAT_STATUS_HELD
		}
		h.Seats, h.Quantity = req.GetSeats(), int32(len(seats))
		h.Tickets = []*inventoryv1.TicketCount{{Class: "cadeira", Quantity: h.Quantity}}
	case req.GetClass() != "" && req.GetQuantity() > 0:
		i := slices.IndexFunc(m.Ga, func(g *inventoryv1.GAClass) bool { return g.Class == req.GetClass() })
		if i < 0 {
			return nil, problem.GRPC(problem.InvalidField("class", "no general-admission class %s", req.GetClass()))
		}
		if c := m.Ga[i].Counts; c.Available < req.GetQuantity() {
			return nil, status.Error(codes.AlreadyExists, "too few tickets left")
		}
		m.Ga[i].Counts.Available -= req.GetQuantity()
		m.Ga[i].Counts.Held += req.GetQuantity()
		h.Class, h.Quantity = req.GetClass(), req.GetQuantity()
		h.Tickets = []*inventoryv1.TicketCount{{Class: req.GetClass(), Quantity: req.GetQuantity()}}
	default:
		return nil, problem.GRPC(problem.InvalidField("seats", "name seats, or a class and a quantity"))
	}
	recount(m)
	v.d.Holds = append(v.d.Holds, h)
	if req.GetIdempotencyKey() != "" {
		v.d.holdKeys[key] = h.Id
	}
	return proto.CloneOf(h), nil
}

func (v *inventory) ReleaseHold(ctx context.Context, req *inventoryv1.ReleaseHoldRequest) (*inventoryv1.Hold, error) {
	u, err := user(ctx)
	if err != nil {
		return nil, err
	}
	v.d.Mu.Lock()
	defer v.d.Mu.Unlock()
	h := v.d.hold(req.GetHoldId(), u)
	if h == nil {
		return nil, notFound("hold", req.GetHoldId())
	}
	if h.Status == inventoryv1.HoldStatus_HOLD_STATUS_ACTIVE {
		h.Status = inventoryv1.HoldStatus_HOLD_STATUS_RELEASED
		m := v.d.SeatMaps[h.EventId]
		for _, id := range h.Seats {
			findSeat(m, id).Status = inventoryv1.SeatStatus_SEAT_STATUS_AVAILABLE
		}
		for _, g := range m.Ga {
			if g.Class == h.Class {
				g.Counts.Available += h.Quantity
				g.Counts.Held -= h.Quantity
			}
		}
		recount(m)
	}
	return proto.CloneOf(h), nil
}

func (v *inventory) GetHold(ctx context.Context, req *inventoryv1.GetHoldRequest) (*inventoryv1.Hold, error) {
	v.d.Mu.Lock()
	defer v.d.Mu.Unlock()
	h := v.d.hold(req.GetHoldId(), identity.FromIncomingContext(ctx).User)
	if h == nil {
		return nil, notFound("hold", req.GetHoldId())
	}
	return proto.CloneOf(h), nil
}

// ListHolds returns every one of the user's holds, newest first, in one page.
func (v *inventory) ListHolds(ctx context.Context, req *inventoryv1.ListHoldsRequest) (*inventoryv1.ListHoldsResponse, error) {
	u, err := user(ctx)
	if err != nil {
		return nil, err
	}
	v.d.Mu.Lock()
	defer v.d.Mu.Unlock()
	resp := &inventoryv1.ListHoldsResponse{Page: &commonv1.PageResponse{}}
	for i := len(v.d.Holds) - 1; i >= 0; i-- {
		if h := v.d.Holds[i]; h.Account == u {
			resp.Holds = append(resp.Holds, proto.CloneOf(h))
		}
	}
	return resp, nil
}

// hold finds a hold by id; a user ("" = a trusted service) sees only their own. Call with
// Mu held.
func (d *Data) hold(id, user string) *inventoryv1.Hold {
	for _, h := range d.Holds {
		if h.Id == id && (user == "" || h.Account == user) {
			return h
		}
	}
	return nil
}

func findSeat(m *inventoryv1.SeatMap, id string) *inventoryv1.Seat {
	for _, sec := range m.Sections {
		for _, row := range sec.Rows {
			for _, st := range row.Seats {
				if st.Id == id {
					return st
				}
			}
		}
	}
	return nil
}

package waitroom

import (
	"context"

	"google.golang.org/protobuf/types/known/timestamppb"

	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/problem"
	waitroomv1 "boxoffice.dev/proto/boxoffice/waitroom/v1"
)

// grpcServer serves boxoffice.waitroom.v1.Waitroom for the user in the call's identity.
type grpcServer struct {
	waitroomv1.UnimplementedWaitroomServer
	queue *Queue
}

var _ waitroomv1.WaitroomServer = (*grpcServer)(nil)

func (g *grpcServer) Join(ctx context.Context, req *waitroomv1.JoinRequest) (*waitroomv1.QueueStatus, error) {
	st, err := g.queue.Join(ctx, req.GetEventId(), identity.FromIncomingContext(ctx).User)
	if err != nil {
		return nil, problem.GRPC(err)
	}
	return statusToProto(st), nil
}

func (g *grpcServer) Status(ctx context.Context, req *waitroomv1.StatusRequest) (*waitroomv1.QueueStatus, error) {
	st, err := g.queue.Status(ctx, req.GetEventId(), identity.FromIncomingContext(ctx).User)
	if err != nil {
		return nil, problem.GRPC(err)
	}
	return statusToProto(st), nil
}

var stateToProto = map[State]waitroomv1.QueueState{
	Waiting:  waitroomv1.QueueState_QUEUE_STATE_WAITING,
	Admitted: waitroomv1.QueueState_QUEUE_STATE_ADMITTED,
	Expired:  waitroomv1.QueueState_QUEUE_STATE_EXPIRED,
}

func statusToProto(st Status) *waitroomv1.QueueStatus {
	p := &waitroomv1.QueueStatus{EventId: st.EventID, State: stateToProto[st.State], Position: st.Position, Pass: st.Pass, EstimatedWaitS: -1}
	if st.EstimatedWait != nil {
		p.EstimatedWaitS = *st.EstimatedWait
	}
	if st.PassExpiresAt != nil {
		p.PassExpiresAt = timestamppb.New(*st.PassExpiresAt)
	}
	return p
}

package notification

import (
	"context"

	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "boxoffice.dev/proto/boxoffice/common/v1"
	notificationv1 "boxoffice.dev/proto/boxoffice/notification/v1"

	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/problem"
)

// grpcServer is the Notification gRPC API over the Store; thin.
type grpcServer struct {
	notificationv1.UnimplementedNotificationServer
	store *Store
}

var _ notificationv1.NotificationServer = (*grpcServer)(nil)

func (g *grpcServer) ListNotifications(ctx context.Context, req *notificationv1.ListNotificationsRequest) (*notificationv1.ListNotificationsResponse, error) {
	account := identity.FromIncomingContext(ctx).User
	if account == "" {
		return nil, problem.GRPC(errSignIn)
	}
	page, err := g.store.List(ctx, account, int(req.GetPage().GetPageSize()), req.GetPage().GetPageToken())
	if err != nil {
		return nil, problem.GRPC(err)
	}
	res := &notificationv1.ListNotificationsResponse{Page: &commonv1.PageResponse{NextPageToken: page.Next}}
	for _, m := range page.Messages {
		res.Notifications = append(res.Notifications, &notificationv1.Message{
			Id: m.ID, EventId: m.EventID, Kind: string(m.Kind), Subject: m.Subject, Body: m.Body, Push: m.Push,
			CreatedAt: timestamppb.New(m.CreatedAt),
		})
	}
	return res, nil
}

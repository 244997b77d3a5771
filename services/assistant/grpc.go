package assistant

import (
	"context"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	"boxoffice.dev/platform/problem"
	assistantv1 "boxoffice.dev/proto/boxoffice/assistant/v1"
	commonv1 "boxoffice.dev/proto/boxoffice/common/v1"
)

// grpcServer serves boxoffice.assistant.v1.Assistant.
type grpcServer struct {
	assistantv1.UnimplementedAssistantServer
	assistant *Assistant
}

var _ assistantv1.AssistantServer = (*grpcServer)(nil)

// Ask answers, with the tokens in the response and in header metadata, as over REST.
func (g *grpcServer) Ask(ctx context.Context, req *assistantv1.AskRequest) (*assistantv1.AskResponse, error) {
	ans, err := g.assistant.Ask(ctx, req.GetQuestion())
	if err != nil {
		return nil, problem.GRPC(err)
	}
	_ = grpc.SetHeader(ctx, metadata.Pairs(strings.ToLower(TokensHeader), strconv.Itoa(ans.Tokens)))
	events := make([]*assistantv1.Suggestion, len(ans.Events))
	for i, m := range ans.Events {
		events[i] = &assistantv1.Suggestion{
			Id: m.ID, Title: m.Title, StartsAt: timestamppb.New(m.StartsAt), VenueId: m.VenueID, VenueName: m.VenueName,
			City: m.City, MinPrice: &commonv1.Money{Currency: m.MinPrice.Currency, Minor: m.MinPrice.Minor},
		}
	}
	u := ans.Understood
	understood := &assistantv1.Understood{City: u.City, MaxPriceMinor: u.MaxPrice, Tags: u.Tags, Period: u.Period}
	if u.From != nil {
		understood.From = timestamppb.New(*u.From)
	}
	if u.To != nil {
		understood.To = timestamppb.New(*u.To)
	}
	return &assistantv1.AskResponse{Answer: ans.Answer, Tokens: int64(ans.Tokens), Events: events, Understood: understood}, nil
}

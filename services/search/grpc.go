package search

import (
	"context"
	"errors"

	"boxoffice.dev/platform/problem"
	searchv1 "boxoffice.dev/proto/boxoffice/search/v1"
)

// grpcServer serves boxoffice.search.v1.Search from an Index.
type grpcServer struct {
	searchv1.UnimplementedSearchServer
	index *Index
}

var _ searchv1.SearchServer = (*grpcServer)(nil)

func (g *grpcServer) Search(ctx context.Context, req *searchv1.SearchRequest) (*searchv1.SearchResponse, error) {
	res, err := g.index.Search(Query{Text: req.GetQuery(), City: req.GetCity(), Limit: int(req.GetLimit())})
	if e, ok := errors.AsType[*problem.Error](err); ok && e.Field == "q" {
		e.Field = "query" // the index names fields as the HTTP API does; the message calls q query
	}
	if err != nil {
		return nil, problem.GRPC(err)
	}
	return resultProto(res), nil
}

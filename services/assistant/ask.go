package assistant

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	"boxoffice.dev/platform/money"
	"boxoffice.dev/platform/problem"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
	commonv1 "boxoffice.dev/proto/boxoffice/common/v1"
)

// Catalog is what the assistant reads of the catalog; catalogv1.CatalogClient is one.
type Catalog interface {
	ListEvents(ctx context.Context, in *catalogv1.ListEventsRequest, opts ...grpc.CallOption) (*catalogv1.ListEventsResponse, error)
	BatchGetVenues(ctx context.Context, in *catalogv1.BatchGetVenuesRequest, opts ...grpc.CallOption) (*catalogv1.BatchGetVenuesResponse, error)
}

var _ Catalog = catalogv1.CatalogClient(nil)

// Assistant answers questions from the catalog. Set the fields, then call Ask from any
// number of goroutines.
type Assistant struct {
	// Catalog is read over gRPC. Required.
	Catalog Catalog
	// Now is the clock "this weekend" and "tomorrow" are counted from; nil means time.Now.
	Now func() time.Time
	// Timeout bounds each catalog call; 0 means 2s.
	Timeout time.Duration
}

// Answer is the reply to one question.
type Answer struct {
	Question   string     `json:"question"`
	Answer     string     `json:"answer"`
	Tokens     int        `json:"tokens"`
	Events     []Match    `json:"events"`
	Understood Understood `json:"understood"`
}

// Understood is the Intent as the API shows it: what the assistant read in the question.
type Understood struct {
	City     string     `json:"city,omitempty"`
	From     *time.Time `json:"from,omitempty"`
	To       *time.Time `json:"to,omitempty"`
	Period   string     `json:"period,omitempty"`
	MaxPrice int64      `json:"max_price,omitempty"` // minor units
	Tags     []string   `json:"tags,omitempty"`
}

// maxPages bounds how far Ask pages through the catalog per genre to count matches.
const maxPages = 5

// Ask answers question: it parses it, retrieves the matching events from the catalog
// (one query per genre asked, merged, soonest first) and composes the answer. An empty or
// overlong question is Invalid; a catalog that does not answer is Unavailable.
func (a *Assistant) Ask(ctx context.Context, question string) (Answer, error) {
	question = strings.TrimSpace(question)
	switch n := utf8.RuneCountInString(question); {
	case n == 0:
		return Answer{}, problem.InvalidField("question", "is required")
	case n > maxQuestionLen:
		return Answer{}, problem.InvalidField("question", "is longer than %d characters", maxQuestionLen)
	}
	in := Parse(question, a.now())
	events, err := a.retrieve(ctx, in)
	if err != nil {
		return Answer{}, err
	}
	listed := events[:min(MaxListed, len(events))]
	matches, err := a.withVenues(ctx, listed)
	if err != nil {
		return Answer{}, err
	}
	text := Compose(in, matches, len(events)-len(listed))
	return Answer{
		Question: question, Answer: text, Tokens: Tokens(question, text),
		Events: matches, Understood: understood(in),
	}, nil
}

// retrieve lists the catalog's events matching in, once each, soonest first.
func (a *Assistant) retrieve(ctx context.Context, in Intent) ([]*catalogv1.Event, error) {
	tags := in.Tags
	if len(tags) == 0 {
		tags = []string{""} // no genre: one query without a tag filter
	}
	byID := map[string]*catalogv1.Event{}
	for _, tag := range tags {
		filter := &catalogv1.EventFilter{City: in.City, MaxPriceMinor: in.MaxPrice, Tag: tag, From: stamp(in.From), To: stamp(in.To)}
		token := ""
		for range maxPages {
			res, err := within(ctx, a.Timeout, func(ctx context.Context) (*catalogv1.ListEventsResponse, error) {
				return a.Catalog.ListEvents(ctx, &catalogv1.ListEventsRequest{Filter: filter, Page: &commonv1.PageRequest{PageSize: 100, PageToken: token}})
			})
			if err != nil {
				return nil, fmt.Errorf("list events: %w", err)
			}
			for _, e := range res.GetEvents() {
				byID[e.GetId()] = e
			}
			if token = res.GetPage().GetNextPageToken(); token == "" {
				break
			}
		}
	}
	events := make([]*catalogv1.Event, 0, len(byID))
	for _, e := range byID {
		events = append(events, e)
	}
	slices.SortFunc(events, func(x, y *catalogv1.Event) int {
		return cmp.Or(x.GetStartsAt().AsTime().Compare(y.GetStartsAt().AsTime()), strings.Compare(x.GetId(), y.GetId()))
	})
	return events, nil
}

// withVenues turns events into matches with their venues' names, in one catalog call.
func (a *Assistant) withVenues(ctx context.Context, events []*catalogv1.Event) ([]Match, error) {
	matches := make([]Match, len(events))
	if len(events) == 0 {
		return matches, nil
	}
	var ids []string
	for _, e := range events {
		if !slices.Contains(ids, e.GetVenueId()) {
			ids = append(ids, e.GetVenueId())
		}
	}
	res, err := within(ctx, a.Timeout, func(ctx context.Context) (*catalogv1.BatchGetVenuesResponse, error) {
		return a.Catalog.BatchGetVenues(ctx, &catalogv1.BatchGetVenuesRequest{Ids: ids})
	})
	if err != nil {
		return nil, fmt.Errorf("venues: %w", err)
	}
	names := map[string]string{}
	for _, v := range res.GetVenues() {
		names[v.GetId()] = v.GetName()
	}
	for i, e := range events {
		matches[i] = Match{
			ID: e.GetId(), Title: e.GetTitle(), StartsAt: e.GetStartsAt().AsTime(), VenueID: e.GetVenueId(),
			VenueName: cmp.Or(names[e.GetVenueId()], e.GetVenueId()), City: e.GetCity(), Country: e.GetCountry(),
			MinPrice: minPrice(e),
		}
	}
	return matches, nil
}

// within runs one catalog call within timeout (0 means 2s), mapping its status to a problem.
func within[T any](ctx context.Context, timeout time.Duration, fn func(context.Context) (T, error)) (T, error) {
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := fn(ctx)
	return res, problem.FromGRPC(err)
}

func minPrice(e *catalogv1.Event) money.Money {
	var m money.Money
	for i, c := range e.GetTicketClasses() {
		if p := c.GetPrice(); i == 0 || p.GetMinor() < m.Minor {
			m = money.Money{Currency: p.GetCurrency(), Minor: p.GetMinor()}
		}
	}
	return m
}

func understood(in Intent) Understood {
	u := Understood{City: in.City, Period: in.Period, MaxPrice: in.MaxPrice, Tags: in.Tags}
	if !in.From.IsZero() {
		u.From = &in.From
	}
	if !in.To.IsZero() {
		u.To = &in.To
	}
	return u
}

func stamp(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func (a *Assistant) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

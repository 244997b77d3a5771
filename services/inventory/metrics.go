package inventory

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"boxoffice.dev/platform/problem"
)

// metrics are the Store's instruments: what the flash-sale scenario and the dashboards count
// (holds granted and refused, and why; holds ended, and how; tickets sold), what the
// catalog's changes did to seat maps, and how the SeatMapper's catch-ups with the catalog
// went.
type metrics struct {
	placed   metric.Int64Counter
	refused  metric.Int64Counter
	ended    metric.Int64Counter
	sold     metric.Int64Counter
	synced   metric.Int64Counter
	catchUps metric.Int64Counter
}

func newMetrics(mp metric.MeterProvider) *metrics {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := mp.Meter("boxoffice.dev/services/inventory")
	// Instrument errors only come from invalid names or units, fixed here: the SDK then
	// returns a working no-op instrument, so they are safe to ignore.
	placed, _ := m.Int64Counter("boxoffice.inventory.holds_placed",
		metric.WithDescription("Holds granted."), metric.WithUnit("{hold}"))
	refused, _ := m.Int64Counter("boxoffice.inventory.holds_refused",
		metric.WithDescription("Hold requests refused, by reason: conflict (taken), forbidden (no valid pass), not_on_sale, account_cap, invalid, not_found, …"),
		metric.WithUnit("{request}"))
	ended, _ := m.Int64Counter("boxoffice.inventory.holds_ended",
		metric.WithDescription("Holds that ended, by how: confirmed, released or expired."), metric.WithUnit("{hold}"))
	sold, _ := m.Int64Counter("boxoffice.inventory.tickets_sold",
		metric.WithDescription("Tickets sold (holds confirmed)."), metric.WithUnit("{ticket}"))
	synced, _ := m.Int64Counter("boxoffice.inventory.seatmap_changes",
		metric.WithDescription("Catalog changes applied to seat maps, from the stream or a catch-up, by outcome: created, replaced, updated, in_use, declared, current."),
		metric.WithUnit("{change}"))
	catchUps, _ := m.Int64Counter("boxoffice.inventory.catalog_catchups",
		metric.WithDescription("Passes over the catalog's events laying out the seat maps the stream no longer holds, by outcome: complete, failed (tried again)."),
		metric.WithUnit("{pass}"))
	return &metrics{placed: placed, refused: refused, ended: ended, sold: sold, synced: synced, catchUps: catchUps}
}

// The recorders are safe on a nil *metrics: a Store used without Init counts nothing.

func (m *metrics) holdPlaced(ctx context.Context) {
	if m != nil {
		m.placed.Add(ctx, 1)
	}
}

func (m *metrics) holdRefused(ctx context.Context, err error) {
	if m != nil {
		m.refused.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", refusalReason(err))))
	}
}

// refusalReason is the refused-holds metric's reason for err: its problem code, except for
// the two refusals that share Unprocessable and mean different things to an operator, a
// sale not open (not_on_sale: fans early or late) and an account over its cap
// (account_cap: one buyer hoarding, or a bot).
func refusalReason(err error) string {
	switch {
	case errors.Is(err, ErrNotOnSale):
		return "not_on_sale"
	case errors.Is(err, ErrAccountCap):
		return "account_cap"
	}
	return string(problem.CodeOf(err))
}

func (m *metrics) holdEnded(ctx context.Context, h Hold) {
	if m == nil {
		return
	}
	m.ended.Add(ctx, 1, metric.WithAttributes(attribute.String("status", string(h.Status))))
	if h.Status == HoldConfirmed {
		m.sold.Add(ctx, int64(h.Quantity))
	}
}

func (m *metrics) seatMapSynced(ctx context.Context, outcome Sync) {
	if m != nil {
		m.synced.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", string(outcome))))
	}
}

// caughtUp counts one pass of a natsconn.CatchUp (its Report): complete, or failed and
// tried again.
func (m *metrics) caughtUp(ctx context.Context, _ int, err error) {
	if m == nil {
		return
	}
	outcome := "complete"
	if err != nil {
		outcome = "failed"
	}
	m.catchUps.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", outcome)))
}

package order

import (
	"context"
	"testing"
	"time"

	"boxoffice.dev/platform/money"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
)

// fixedPrices is a catalog with one price list for every event.
type fixedPrices map[string]money.Money

func (p fixedPrices) Prices(context.Context, string) (map[string]money.Money, error) { return p, nil }

// Two requests with one idempotency key race: the second misses the key, then its twin
// orders the hold and the saga sells it before the second reads the hold. The second must
// answer as a retry, with the twin's order, not 409 "already sold".
func TestPlaceAnswersATwinThatWonMeanwhile(t *testing.T) {
	testkit.ForEachDB(t, "order", func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		f := newSagaFixture(t, db)
		h := Hold{ID: "hold-1", EventID: "evt-1", Account: "acc_1", Status: HoldActive,
			ExpiresAt: f.store.Clock.Now().UTC().Add(time.Hour), Tickets: []Tickets{{"cat-1", 1}}}
		f.holds.add(h)
		prices := fixedPrices{"cat-1": {Currency: "BRL", Minor: 5000}}
		req := CreateRequest{Account: "acc_1", IdempotencyKey: "same-key", HoldID: h.ID}

		var twin Order
		f.holds.fail = func(op, id string) error {
			if op != "get" || twin.ID != "" {
				return nil
			}
			lines, total, err := Price(h, prices)
			if err != nil {
				return err
			}
			if twin, _, err = f.store.Create(ctx, req, f.store.NewOrder(req.Account, h, lines, total)); err != nil {
				return err
			}
			f.holds.holds[id].Status = HoldConfirmed // the twin's saga sold the hold
			return nil
		}
		orders := &Service{Store: f.store, Holds: f.holds, Prices: prices, Saga: f.saga}
		o, created, err := orders.Place(ctx, req)
		if err != nil || created || o.ID != twin.ID {
			t.Errorf("Place after a twin won = %s, created %v, %v; want the twin's order %s, not created", o.ID, created, err, twin.ID)
		}
	})
}

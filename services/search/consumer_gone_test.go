package search_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"boxoffice.dev/platform/testkit"
	"boxoffice.dev/services/catalog"
	"boxoffice.dev/services/search"
)

// TestCatalogChangeWhileTheConsumerIsGoneReachesTheIndex deletes search's durable consumer
// while search follows the catalog (an operator, NATS restarted without its store), changes
// the catalog while no consumer exists, and checks that the change reaches the index once
// search has set its consumer up again. The new consumer starts at the stream's end, so only
// a rebuild from the catalog brings the change made in the gap.
func TestCatalogChangeWhileTheConsumerIsGoneReachesTheIndex(t *testing.T) {
	const durable = "search-gap"
	natsURL := testkit.StartNATS(t).ClientURL()
	cat := testkit.RunProcess(t, catalog.Run, map[string]string{"NATS_URL": natsURL, "SEED_DEMO": "true"})
	srch := testkit.RunProcess(t, search.Run, map[string]string{"NATS_URL": natsURL, "CATALOG_GRPC_ADDR": cat.GRPCAddr, "SEARCH_CONSUMER": durable})
	testkit.Eventually(t, 15*time.Second, "search ready", srch.Ready)

	js := testkit.JetStream(t, natsURL)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := js.Stream(ctx, catalog.Stream)
	if err != nil {
		t.Fatal(err)
	}

	// Delete search's consumer and hold its name with one search cannot take over (a
	// deliver policy cannot be updated), so the gap lasts until the test ends it.
	blocker := jetstream.ConsumerConfig{Durable: durable, DeliverPolicy: jetstream.DeliverLastPolicy, AckPolicy: jetstream.AckExplicitPolicy}
	testkit.Eventually(t, 10*time.Second, "search's consumer replaced by the blocker", func() bool {
		if err := js.DeleteConsumer(ctx, catalog.Stream, durable); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			t.Fatalf("delete consumer: %v", err)
		}
		_, err := js.CreateConsumer(ctx, catalog.Stream, blocker)
		return err == nil // else search set its consumer up again first: delete it again
	})

	patchTitle(t, cat, "evt-005", "Gapwhale Serenade")
	testkit.Eventually(t, 10*time.Second, "the gap's change is in the stream", func() bool {
		m, err := stream.GetLastMsgForSubject(ctx, "boxoffice.catalog.event.updated")
		return err == nil && strings.Contains(string(m.Data), "Gapwhale")
	})
	if err := js.DeleteConsumer(ctx, catalog.Stream, durable); err != nil {
		t.Fatalf("delete the blocker: %v", err)
	}
	testkit.Eventually(t, 10*time.Second, "search sets its consumer up again", func() bool {
		c, err := js.Consumer(ctx, catalog.Stream, durable)
		return err == nil && c.CachedInfo().Config.DeliverPolicy != blocker.DeliverPolicy
	})

	// A change after the consumer is back arrives as an event, as always.
	patchTitle(t, cat, "evt-006", "Afterwhale Nocturne")
	testkit.Eventually(t, 10*time.Second, "the change after the gap indexed", func() bool {
		return len(find(t, srch, "afterwhale", "")) == 1
	})
	testkit.Eventually(t, 10*time.Second, "the gap's change indexed", func() bool {
		hits := find(t, srch, "gapwhale", "")
		return len(hits) == 1 && strings.HasPrefix(hits[0], "evt-005 ")
	})
}

// patchTitle renames a catalog event through the admin API.
func patchTitle(t *testing.T, cat *testkit.Process, id, title string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPatch, cat.HTTPURL+"/v1/admin/events/"+id, strings.NewReader(`{"title":"`+title+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("PATCH %s: %v", id, err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("PATCH %s = %d, want 200", id, res.StatusCode)
	}
}

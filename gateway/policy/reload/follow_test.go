package reload

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/gateway/policy/policystore"
	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/logging"
	"boxoffice.dev/platform/testkit"
)

// TestFollowTableOnEvent shows a row written to the table taking effect on the NATS event,
// long before the periodic refresh would pick it up.
func TestFollowTableOnEvent(t *testing.T) {
	db := testkit.OpenDBs(t, "gateway")[0]
	ctx, cancel := context.WithCancel(context.Background())
	if err := db.Migrate(ctx, policystore.Migrations()); err != nil {
		t.Fatal(err)
	}
	ns := testkit.StartNATS(t)
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	live, _ := loadLive(t, base, nil)
	tab := policystore.NewTable(db, clock.Clock{})
	done := make(chan error, 1)
	go func() { done <- FollowTable(ctx, tab, live, nc, time.Hour, logging.Discard()) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("FollowTable() = %v, want nil", err)
		}
	})

	if err := tab.Put(ctx, policy.TenantRule{Tenant: "ten_a", Route: "*", Capacity: 9, RefillPerSecond: 3}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 5*time.Second, "the override applies after ratelimit.rules.changed", func() bool {
		// The subscription starts asynchronously; publish until it has been heard.
		_ = nc.Publish(policystore.RulesChangedSubject, nil)
		r, ok := live.Current().TenantOverride("ten_a", "holds")
		return ok && r.Burst == 9
	})
}

// What Announcer publishes, FollowTable hears: the admin API's side of the same protocol.
func TestAnnouncerReachesFollowers(t *testing.T) {
	if Announcer(nil) != nil {
		t.Error("Announcer(nil) != nil, want nil: without NATS the replicas learn at their refresh")
	}
	ns := testkit.StartNATS(t)
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	heard := make(chan string, 1)
	sub, err := nc.Subscribe(policystore.PolicyChangedSubject, func(m *nats.Msg) { heard <- m.Subject })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := Announcer(nc)(context.Background(), policystore.PolicyChangedSubject); err != nil {
		t.Fatalf("announce = %v, want nil", err)
	}
	select {
	case got := <-heard:
		if got != policystore.PolicyChangedSubject {
			t.Errorf("heard %q, want %q", got, policystore.PolicyChangedSubject)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("no message on %s within 5s of the announcement", policystore.PolicyChangedSubject)
	}
}

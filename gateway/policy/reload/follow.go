package reload

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"

	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/gateway/policy/policystore"
)

// Tables reads the stored policy tables into live once; *policystore.Table is one.
type Tables interface {
	Reload(ctx context.Context, live *policy.Live) error
}

var _ Tables = (*policystore.Table)(nil)

// DefaultTableRefresh is how often the tables are reloaded without an event: the bound on how
// stale a replica that missed an event can be.
const DefaultTableRefresh = 30 * time.Second

// FollowTable reloads both tables into live (Reload) now, then every refresh
// (0 = DefaultTableRefresh) and whenever policystore.PolicyChangedSubject or
// policystore.RulesChangedSubject arrives on nc (nil = no events), until ctx is done. A
// reload that fails keeps the edits and overrides in force and is retried at the next tick:
// a database outage must not drop every tenant back to its plan, nor the policy back to its
// file.
func FollowTable(ctx context.Context, t Tables, live *policy.Live, nc *nats.Conn, refresh time.Duration, log *slog.Logger) error {
	if refresh <= 0 {
		refresh = DefaultTableRefresh
	}
	changed := make(chan struct{}, 1)
	if nc != nil {
		for _, subject := range []string{policystore.PolicyChangedSubject, policystore.RulesChangedSubject} {
			sub, err := nc.Subscribe(subject, func(*nats.Msg) {
				select {
				case changed <- struct{}{}:
				default: // a reload is already pending; it will read this change too
				}
			})
			if err != nil {
				return fmt.Errorf("subscribe %s: %w", subject, err)
			}
			defer func() { _ = sub.Unsubscribe() }()
		}
	}
	tick := time.NewTicker(refresh)
	defer tick.Stop()
	for {
		loadCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := t.Reload(loadCtx, live)
		cancel()
		if err != nil {
			log.Warn("policy tables reload failed; keeping the edits and overrides in force", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-changed:
		}
	}
}

// Announcer returns what tells every replica, this one too, to reload the tables now: a
// publish on nc of the subject named (policystore.PolicyChangedSubject or
// policystore.RulesChangedSubject), flushed, which FollowTable hears. A nil nc gives nil:
// the replicas then learn of a change at their next refresh.
func Announcer(nc *nats.Conn) func(ctx context.Context, subject string) error {
	if nc == nil {
		return nil
	}
	return func(_ context.Context, subject string) error {
		if err := nc.Publish(subject, nil); err != nil {
			return fmt.Errorf("announce %s: %w", subject, err)
		}
		return nc.Flush()
	}
}

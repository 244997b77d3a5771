package reload

import (
	"bytes"
	"context"
	"log/slog"
	"time"

	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/gateway/policy/policystore"
)

// Recorder writes a change to the audit trail; *policystore.Store is one.
type Recorder interface {
	RecordChange(ctx context.Context, c policy.Change) (policy.Change, error)
}

var _ Recorder = (*policystore.Store)(nil)

// recordTimeout bounds the write of one reload's record: the reload is in force already,
// and a database that does not answer must not hold the next one for long.
const recordTimeout = 2 * time.Second

// RecordReloads is a Reloaded that records each reload of the policy file in the audit
// trail, by "file:<path>" on this replica (every replica reads its own file, so each records
// its own reload). A reload whose policy is the same, comments and layout aside, is no
// change and is not recorded. A record that cannot be written (the database down) is logged
// and lost: the reload is in force whatever the trail can hold, since a policy file is how an
// operator mends things when the database is the trouble.
func RecordReloads(trail Recorder, replica string, log *slog.Logger) Reloaded {
	return func(ctx context.Context, path string, before, after *policy.Policy) {
		was, is := policy.JSONOf(before), policy.JSONOf(after)
		if bytes.Equal(was, is) {
			return
		}
		ctx, cancel := context.WithTimeout(ctx, recordTimeout)
		defer cancel()
		c := policy.Change{Actor: "file:" + path, Replica: replica, Kind: policy.ChangeFileReload, ID: path,
			Action: policy.ActionReload, Before: was, After: is}
		if _, err := trail.RecordChange(ctx, c); err != nil {
			log.WarnContext(ctx, "policy file reload in force but not recorded in the audit trail", "path", path, "error", err)
		}
	}
}

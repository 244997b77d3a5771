package scenario

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// AuditEntry is one change the run made to the gateway's policy, as the gateway's audit
// trail (GET /admin/audit) recorded it: the change_id finds it there with the element
// before and after.
type AuditEntry struct {
	ChangeID string    `json:"change_id"`
	At       time.Time `json:"at"`
	Actor    string    `json:"actor"`
	Kind     string    `json:"kind"`
	ID       string    `json:"id"`
	Action   string    `json:"action"`
}

// auditPage is the most entries a run lists: a run turns a handful of knobs, each a few
// times; more would be a report nobody reads.
const auditPage = 200

// readAudit puts in the result the changes the gateway recorded as this run's, its set-up,
// knobs and put-backs, newest first. A gateway without a trail (or down) leaves it empty: the
// report then says nothing was recorded, and the run's outcome does not depend on it.
func (r *Run) readAudit(ctx context.Context) {
	if r.target.Admin == "" {
		return
	}
	var page struct {
		Changes []AuditEntry `json:"changes"`
	}
	q := url.Values{"actor": {"admin:" + r.sys.actor}, "limit": {strconv.Itoa(auditPage)}}
	if err := r.sys.admin(ctx, http.MethodGet, "/admin/audit?"+q.Encode(), nil, &page); err != nil {
		r.log.Warn("the gateway's audit trail not read", "error", err)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.result.Audit = page.Changes
}

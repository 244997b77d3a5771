package admin

import (
	"context"
	"net/http"

	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/platform/httpapi"
	"boxoffice.dev/platform/problem"
)

// HotKeys lists the keys that take most of the limiter's decisions; *ratelimit.HotKeys (and
// the gateway's *ratelimit.Chain) is one.
type HotKeys interface {
	Top(ctx context.Context, n int) ([]ratelimit.HotKey, error)
}

var _ HotKeys = (*ratelimit.HotKeys)(nil)

// listHotKeys answers GET /admin/hotkeys?limit=n (default 20, at most 200): the rules and keys
// with the most decisions of the last 10 to 20 seconds, every replica together, each with its
// share of all decisions.
func (a *api) listHotKeys(w http.ResponseWriter, r *http.Request) {
	if a.HotKeys == nil {
		problem.Write(w, r, nil, problem.New(problem.NotFound, "this gateway counts no hot keys"))
		return
	}
	n, err := httpapi.Limit(r.URL.Query(), 20, 200)
	if err != nil {
		problem.Write(w, r, nil, err)
		return
	}
	keys, err := a.HotKeys.Top(r.Context(), n)
	if err != nil {
		a.Log.WarnContext(r.Context(), "hot keys", "error", err)
		problem.Write(w, r, nil, problem.New(problem.Unavailable, "the hot keys are counted in Redis, which does not answer; try again"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"hot_keys": keys})
}

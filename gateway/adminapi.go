package gateway

import (
	"context"

	"boxoffice.dev/gateway/admin"
	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/gateway/policy/policystore"
	"boxoffice.dev/gateway/policy/reload"
	"boxoffice.dev/gateway/upstream"
	"boxoffice.dev/platform/server"
)

// serveAdmin serves the admin API on its own listener (ADMIN_ADDR), with a generated token
// when ADMIN_TOKEN is not set (admin.GenerateToken). Its changes are recorded in the policy
// database's audit trail as made on replica; hot lists the limiter's hot keys.
func serveAdmin(ctx context.Context, s *server.Server, cfg Config, live *policy.Live, pools *upstream.Pools, store *policystore.Store, replica string, hot admin.HotKeys) error {
	token := cfg.AdminToken
	if token == "" {
		var path string
		var err error
		if token, path, err = admin.GenerateToken(s.Config.DataDir); err != nil {
			return err
		}
		s.Log.WarnContext(ctx, "ADMIN_TOKEN not set: generated an admin token", "file", path)
	}
	_, err := s.Listen("admin", cfg.AdminAddr, admin.New(admin.Options{Live: live, Upstreams: pools, Tenants: store, Edits: store, Audit: store, Replica: replica,
		HotKeys: hot, Announce: reload.Announcer(s.NATS), Token: token, Log: s.Log, Metrics: s.Telemetry.MetricsHandler(), Control: s.Control.Handler()}))
	return err
}

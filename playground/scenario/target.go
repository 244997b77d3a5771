package scenario

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Target is the running system a scenario drives: what `boxoffice up` writes to
// .boxoffice/endpoints.json (TargetFromEndpoints), or what a compose stack publishes.
type Target struct {
	// Gateway is the public entry every simulated client goes through.
	Gateway string `json:"gateway"`
	// Admin and AdminToken reach the gateway's admin API (limits, routes, services).
	Admin      string `json:"admin"`
	AdminToken string `json:"admin_token"`
	// NATS reaches every replica's control hook at once; "" means each instance's /control.
	// The process that started the limiter's store, if any, takes its faults there too
	// (StoreSubject).
	NATS string `json:"nats"`
	// Redis is the limiter's store, which a run stalls with CLIENT PAUSE when no process of
	// the system owns it; "" when unknown.
	Redis string `json:"redis"`
	// Services lists every instance's base URL by service name: the control hooks, the
	// backend's /metrics (in-flight work), and flash-sale set-up calls.
	Services map[string][]string `json:"services"`
	Users    []User              `json:"users"`
	Partners []Partner           `json:"partners"`
}

// User is a demo account to log in as.
type User struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

// Partner is a demo tenant and its API key.
type Partner struct {
	Tenant string `json:"tenant"`
	Plan   string `json:"plan"`
	APIKey string `json:"api_key"`
}

// TargetFromEndpoints reads the endpoints.json that `boxoffice up` writes.
func TargetFromEndpoints(path string) (Target, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Target{}, fmt.Errorf("read endpoints: %w", err)
	}
	var ep struct {
		Gateway string `json:"gateway"`
		Admin   struct {
			URL   string `json:"url"`
			Token string `json:"token"`
		} `json:"admin"`
		Services map[string][]string `json:"services"`
		NATS     string              `json:"nats"`
		Redis    struct {
			URL string `json:"url"`
		} `json:"redis"`
		Users    []User    `json:"users"`
		Partners []Partner `json:"partners"`
	}
	if err := json.Unmarshal(b, &ep); err != nil {
		return Target{}, fmt.Errorf("parse %s: %w", path, err)
	}
	t := Target{
		Gateway: strings.TrimSuffix(ep.Gateway, "/"), Admin: strings.TrimSuffix(ep.Admin.URL, "/"), AdminToken: ep.Admin.Token,
		NATS: ep.NATS, Redis: ep.Redis.URL, Services: ep.Services, Users: ep.Users, Partners: ep.Partners,
	}
	if t.Gateway == "" {
		return Target{}, fmt.Errorf("%s names no gateway", path)
	}
	return t, nil
}

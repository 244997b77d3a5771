package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"boxoffice.dev/playground/load"
)

// demoFans is how many demo accounts `boxoffice up` seeds (fan0001 … fan2000), all with the
// password of the first user the target lists.
const demoFans = 2000

// identities gives each stream its identities: fake client IPs, logged-in demo fans (each
// also on an IP of its own) or the demo partners' API keys. Streams get disjoint IPs and
// fans, so one stream's limits never spend another's budget.
func (r *Run) identities(ctx context.Context) error {
	nextFan := 1
	for i, s := range r.streams {
		n := max(s.Count, 1)
		base := (i + 1) * 100_000
		switch s.Identity {
		case "ip":
			for j := range n {
				s.ids = append(s.ids, load.Identity{Name: load.FakeIP(base + j), IP: load.FakeIP(base + j)})
			}
		case "user":
			tokens, err := r.login(ctx, nextFan, n)
			if err != nil {
				return err
			}
			for j, tok := range tokens {
				s.ids = append(s.ids, load.Identity{Name: tok.email, IP: load.FakeIP(base + j), Token: tok.token})
			}
			nextFan += n
			if err := r.awaitTokens(ctx, s.ids[0]); err != nil {
				return err
			}
		case "apikey":
			var keys []Partner
			for _, p := range r.target.Partners {
				if p.Plan != "internal" { // internal keys skip every limit: no lesson there
					keys = append(keys, p)
				}
			}
			if len(keys) == 0 {
				return fmt.Errorf("stream %s: the target lists no partner API key", s.Name)
			}
			for j := range n {
				p := keys[j%len(keys)]
				s.ids = append(s.ids, load.Identity{Name: p.Tenant, IP: load.FakeIP(base + j), APIKey: p.APIKey})
			}
		}
	}
	return nil
}

type login struct{ email, token string }

// tokens caches access tokens across runs in this process: logging in is bcrypt-slow on
// purpose, and a run should not spend its set-up, or the per-account login limit, on it.
var tokens = struct {
	sync.Mutex
	m map[string]cachedToken
}{m: map[string]cachedToken{}}

type cachedToken struct {
	token   string
	expires time.Time
}

// login returns access tokens for n demo fans from fan number first on, logging in those
// without a fresh cached token: at the auth service directly when the target lists it (no
// gateway limit to spend), else through the gateway from a fake IP each.
func (r *Run) login(ctx context.Context, first, n int) ([]login, error) {
	if first+n-1 > demoFans {
		return nil, fmt.Errorf("%d fans asked for, the demo has %d", first+n-1, demoFans)
	}
	password := "boxoffice-demo"
	if len(r.target.Users) > 0 {
		password = r.target.Users[0].Password
	}
	url := r.target.Gateway + "/v1/auth/login"
	if a := r.target.Services["auth"]; len(a) > 0 {
		url = a[0] + "/v1/auth/login"
	}
	out := make([]login, n)
	var g errgroup.Group
	g.SetLimit(4) // bcrypt is CPU: more at once only queues
	now := r.o.Now()
	fresh := 0
	for i := range n {
		email := fmt.Sprintf("fan%04d@boxoffice.test", first+i)
		out[i].email = email
		tokens.Lock()
		c, ok := tokens.m[email]
		tokens.Unlock()
		if ok && c.expires.After(now.Add(5*time.Minute)) {
			out[i].token = c.token
			continue
		}
		fresh++
		g.Go(func() error {
			tok, ttl, err := r.loginOne(ctx, url, email, password, load.FakeIP(900_000+first+i))
			if err != nil {
				return err
			}
			out[i].token = tok
			tokens.Lock()
			tokens.m[email] = cachedToken{token: tok, expires: now.Add(ttl)}
			tokens.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("log fans in: %w", err)
	}
	r.event(0, "setup", fmt.Sprintf("%d fans logged in (%d tokens reused)", n, n-fresh))
	return out, nil
}

func (r *Run) loginOne(ctx context.Context, url, email, password, ip string) (string, time.Duration, error) {
	body, _ := json.Marshal(map[string]string{"email": email, "password": password})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return "", 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-For", ip)
	resp, err := r.sys.http.Do(req)
	if err != nil {
		return "", 0, fmt.Errorf("log in %s: %w", email, err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
	}
	if resp.StatusCode != http.StatusOK {
		return "", 0, fmt.Errorf("log in %s: %s", email, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		return "", 0, fmt.Errorf("log in %s: no access token in the answer", email)
	}
	return tok.AccessToken, time.Duration(tok.ExpiresIn) * time.Second, nil
}

// awaitTokens waits, up to 20s, until the gateway accepts a freshly issued token. A gateway
// that has just started may hold a key set fetched before the auth service's key existed,
// and refetches it at most every few seconds (so forged kids cannot make it hammer the auth
// service): without the wait, a run's first seconds would be 401s.
func (r *Run) awaitTokens(ctx context.Context, id load.Identity) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.target.Gateway+"/v1/holds?limit=1", nil)
		if err != nil {
			return err
		}
		id.Apply(req)
		resp, err := r.sys.http.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				return nil
			}
		}
		if r.o.Sleep(ctx, 250*time.Millisecond) != nil {
			return fmt.Errorf("the gateway did not accept the fans' tokens within 20s (last: %v)", errOrStatus(err, resp))
		}
	}
}

func errOrStatus(err error, resp *http.Response) string {
	if err != nil {
		return err.Error()
	}
	return resp.Status
}

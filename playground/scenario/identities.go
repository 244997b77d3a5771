package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
// also on an IP of its own), demo fans' accounts to log in as (the same) or the demo
// partners' API keys. Streams get disjoint IPs and fans, so one stream's limits never spend
// another's budget.
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
			if err == nil && tokens[0].cached && !r.accepted(ctx, tokens[0].token) {
				// Tokens from an earlier run against a system since replaced at the same
				// address (new signing keys): log in again.
				forget(tokens)
				tokens, err = r.login(ctx, nextFan, n)
			}
			if err == nil {
				err = r.awaitTokens(ctx, tokens[0].token)
			}
			if err != nil {
				return err
			}
			for j, tok := range tokens {
				s.ids = append(s.ids, load.Identity{Name: tok.email, IP: load.FakeIP(base + j), Token: tok.token})
			}
			nextFan += n
		case "account":
			if nextFan+n-1 > demoFans {
				return fmt.Errorf("stream %s: %d fans asked for, the demo has %d", s.Name, nextFan+n-1, demoFans)
			}
			for j := range n {
				s.ids = append(s.ids, load.Identity{Name: fanEmail(nextFan + j), IP: load.FakeIP(base + j)})
			}
			nextFan += n
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

// fanEmail is demo fan number n's email (from 1).
func fanEmail(n int) string { return fmt.Sprintf("fan%04d@boxoffice.test", n) }

// demoPassword is the demo fans' shared password: the first user's the target lists.
func (r *Run) demoPassword() string {
	if len(r.target.Users) > 0 {
		return r.target.Users[0].Password
	}
	return "boxoffice-demo"
}

type login struct {
	email, token string
	key          string // in the token cache
	cached       bool   // came from the cache, not from logging in now
}

// tokens caches access tokens across runs in this process, by login URL and email: logging
// in is bcrypt-slow on purpose, and a run should not spend its set-up, or the per-account
// login limit, on it.
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
	password := r.demoPassword()
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
		email := fanEmail(first + i)
		out[i].email, out[i].key = email, url+" "+email
		tokens.Lock()
		c, ok := tokens.m[out[i].key]
		tokens.Unlock()
		if ok && c.expires.After(now.Add(5*time.Minute)) {
			out[i].token, out[i].cached = c.token, true
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
			tokens.m[out[i].key] = cachedToken{token: tok, expires: now.Add(ttl)}
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

// forget drops logins from the token cache.
func forget(ls []login) {
	tokens.Lock()
	defer tokens.Unlock()
	for _, l := range ls {
		delete(tokens.m, l.key)
	}
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
func (r *Run) awaitTokens(ctx context.Context, token string) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for !r.accepted(ctx, token) {
		if r.o.Sleep(ctx, 250*time.Millisecond) != nil {
			return errors.New("the gateway did not accept the fans' tokens within 20s")
		}
	}
	return nil
}

// accepted reports whether the gateway takes token on a route that needs a user.
func (r *Run) accepted(ctx context.Context, token string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.target.Gateway+"/v1/holds?limit=1", nil)
	if err != nil {
		return false
	}
	load.Identity{Token: token, IP: load.FakeIP(700_000)}.Apply(req)
	resp, err := r.sys.http.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode != http.StatusUnauthorized
}

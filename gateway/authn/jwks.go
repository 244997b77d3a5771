package authn

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/logging"
	"boxoffice.dev/services/auth/token"
)

// JWKS is the auth service's key set as the gateway caches it; it implements token.Keys. Keys
// come from URL (auth's /.well-known/jwks.json), kept for the response's max-age and refreshed
// by Run; an unknown kid (a freshly rotated key) triggers a fetch at once, at most once per
// MinRefetch so forged kids cannot flood auth. When a fetch fails the known keys stay, and an
// unknown kid is ErrKeysUnavailable, not invalid: an auth outage should not log everyone out.
// Safe for concurrent use; PublicKey never blocks.
type JWKS struct {
	url        string
	client     *http.Client
	now        func() time.Time
	minRefetch time.Duration
	maxAge     time.Duration
	log        *slog.Logger

	keys atomic.Pointer[keyCache]

	mu        sync.Mutex // one fetch at a time; later callers reuse its result
	lastFetch time.Time
	lastErr   error // the last fetch's failure; nil after a success
}

// ErrKeysUnavailable is returned for a token whose kid is unknown while the key set cannot be
// checked: none was ever fetched, or the last fetch failed. Whether the token is valid is not
// known, so the caller should answer "try again" rather than "invalid": an auth outage should
// not log everyone out.
var ErrKeysUnavailable = errors.New("the auth service's keys cannot be fetched now")

type keyCache struct {
	gen     uint64
	set     token.KeySet
	fetched time.Time
	maxAge  time.Duration
}

// JWKSOptions configures a JWKS; the zero value gives the defaults.
type JWKSOptions struct {
	// Client fetches the key set; nil means a client with a 2s timeout.
	Client *http.Client
	// Clock is the time source; the zero Clock is time.Now.
	Clock clock.Clock
	// MinRefetch is the least time between two fetches caused by unknown kids; 0 means 10s.
	MinRefetch time.Duration
	// MaxAge is how long keys are kept when the response has no max-age; 0 means 5m.
	MaxAge time.Duration
	// Log reports fetch failures; nil discards.
	Log *slog.Logger
}

// NewJWKS returns an empty cache of the key set at url; the first token fetches it.
func NewJWKS(url string, o JWKSOptions) *JWKS {
	j := &JWKS{url: url, client: o.Client, now: o.Clock.Now, minRefetch: o.MinRefetch, maxAge: o.MaxAge, log: o.Log}
	if j.client == nil {
		j.client = &http.Client{Timeout: 2 * time.Second}
	}
	if j.minRefetch <= 0 {
		j.minRefetch = 10 * time.Second
	}
	if j.maxAge <= 0 {
		j.maxAge = 5 * time.Minute
	}
	if j.log == nil {
		j.log = logging.Discard()
	}
	return j
}

var _ token.Keys = (*JWKS)(nil)

// PublicKey returns the cached key named kid.
func (j *JWKS) PublicKey(kid string) (ed25519.PublicKey, bool) {
	c := j.keys.Load()
	if c == nil {
		return nil, false
	}
	return c.set.PublicKey(kid)
}

// Refresh fetches the key set now.
func (j *JWKS) Refresh(ctx context.Context) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.fetch(ctx)
}

// refetchUnknown fetches the key set for a token whose kid was unknown in generation seen,
// unless a fetch happened within MinRefetch. It reports whether the cache has changed since
// seen, so that verifying again may succeed; when it has not, an error wrapping
// ErrKeysUnavailable says the kid may be one the key set could not be asked about (no key
// set was ever fetched, or the last fetch failed), and nil that the kid is not in a key set
// the last fetch confirmed.
func (j *JWKS) refetchUnknown(ctx context.Context, seen uint64) (bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.generation() != seen {
		return true, nil // fetched by another request while this one waited for the lock
	}
	if !j.lastFetch.IsZero() && j.now().Sub(j.lastFetch) < j.refetchInterval() {
		if j.lastErr != nil { // also the case while no key set was ever fetched
			return false, fmt.Errorf("%w: %w", ErrKeysUnavailable, j.lastErr)
		}
		return false, nil
	}
	// The fetch serves every request waiting on the lock and the MinRefetch that follows, so
	// the request that happens to start it must not end it by hanging up: a canceled fetch
	// would count as failed and answer every unknown kid 503 until the next one. The client's
	// timeout still bounds it.
	if err := j.fetch(context.WithoutCancel(ctx)); err != nil {
		return false, fmt.Errorf("%w: %w", ErrKeysUnavailable, err)
	}
	return true, nil
}

// coldRefetch bounds the wait between fetches while no key set has ever been fetched: at start
// the gateway may be up before auth, and every token would be refused until a fetch succeeds.
// A short wait still keeps a flood of tokens from becoming a flood of fetches.
const coldRefetch = 250 * time.Millisecond

// refetchInterval is the least time between two fetches: MinRefetch once keys are known,
// at most coldRefetch before.
func (j *JWKS) refetchInterval() time.Duration {
	if j.generation() == 0 {
		return min(j.minRefetch, coldRefetch)
	}
	return j.minRefetch
}

// generation counts successful fetches; 0 before the first.
func (j *JWKS) generation() uint64 {
	if c := j.keys.Load(); c != nil {
		return c.gen
	}
	return 0
}

// fetch gets the key set and records the outcome; j.mu is held.
func (j *JWKS) fetch(ctx context.Context) error {
	j.lastFetch = j.now()
	j.lastErr = j.fetchSet(ctx)
	return j.lastErr
}

// fetchSet gets the key set and stores it; j.mu is held.
func (j *JWKS) fetchSet(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.url, nil)
	if err != nil {
		return fmt.Errorf("jwks: %w", err)
	}
	resp, err := j.client.Do(req)
	if err != nil {
		j.log.WarnContext(ctx, "jwks fetch failed; keeping the known keys", "url", j.url, "error", err)
		return fmt.Errorf("jwks: fetch: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		j.log.WarnContext(ctx, "jwks fetch failed; keeping the known keys", "url", j.url, "status", resp.StatusCode)
		return fmt.Errorf("jwks: fetch: status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("jwks: read: %w", err)
	}
	set, err := token.ParseJWKS(body)
	if err != nil {
		j.log.ErrorContext(ctx, "jwks unusable; keeping the known keys", "url", j.url, "error", err)
		return err
	}
	j.keys.Store(&keyCache{gen: j.generation() + 1, set: set, fetched: j.now(), maxAge: maxAge(resp.Header.Get("Cache-Control"), j.maxAge)})
	return nil
}

// maxKeyAge is the longest a key set is trusted without asking the auth service again,
// whatever its Cache-Control says: a key rotated out of the JWKS stops verifying tokens
// within it. It also keeps a huge max-age from overflowing a Duration, which would make the
// refresh loop fetch without pause.
const maxKeyAge = time.Hour

// maxAge reads max-age from a Cache-Control value, at most maxKeyAge, or returns def.
func maxAge(cc string, def time.Duration) time.Duration {
	for _, d := range strings.Split(cc, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(d), "max-age="); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
				return time.Duration(min(n, int64(maxKeyAge/time.Second))) * time.Second
			}
		}
	}
	return def
}

// Run keeps the cache fresh until ctx is done: it fetches when the keys reach their max-age,
// and every MinRefetch while fetches fail (every coldRefetch while no keys are known yet).
func (j *JWKS) Run(ctx context.Context) {
	for {
		wait := j.refetchInterval()
		if c := j.keys.Load(); c != nil {
			if left := c.fetched.Add(c.maxAge).Sub(j.now()); left > 0 {
				wait = left
			} else if err := j.Refresh(ctx); err == nil {
				continue
			}
		} else if err := j.Refresh(ctx); err == nil {
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

package limits

import (
	"fmt"
	"math"
	"math/bits"
	"net/http"
	"strconv"
	"time"

	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/platform/problem"
)

// QuotaExceeded is the problem type of a 429, from the IETF RateLimit header fields draft.
const QuotaExceeded = "https://iana.org/assignments/http-problem-types#quota-exceeded"

// SetHeaders writes the rate limit fields of res onto h (reqs are the requests res decided,
// in order): RateLimit-Policy and RateLimit, in the syntax of the IETF HTTPAPI draft
// "RateLimit header fields for HTTP" (draft-10/11), for every enforced rule, and the legacy
// X-RateLimit-* fields for the effective rule alone (the one that denied with the longest
// wait, or else the one closest to exhaustion). Shadow rules never show; nothing is written
// when no enforced rule applies. See docs/lessons/client-contract.md, "What a client gets
// when a limit is hit".
func SetHeaders(h http.Header, reqs []ratelimit.Request, res ratelimit.Result) {
	// Every request that passes a limit writes these fields, so they are built by hand, on
	// the stack, rather than through fmt and a string per policy.
	var pbuf, lbuf [256]byte
	policies, limits := pbuf[:0], lbuf[:0]
	eff := res.Decision
	effQuota := eff.Limit
	for i, d := range res.Rules {
		if d.Mode == ratelimit.Shadow {
			continue
		}
		if len(policies) > 0 {
			policies, limits = append(policies, ", "...), append(limits, ", "...)
		}
		q, w := d.Limit, d.Window
		if i < len(reqs) {
			q, w = quota(d, reqs[i].Rule)
		}
		if d.Rule == eff.Rule && d.Remaining == eff.Remaining && d.Reset == eff.Reset {
			effQuota = q
		}
		policies = appendSFString(policies, d.Rule)
		policies = append(policies, ";q="...)
		policies = strconv.AppendInt(policies, int64(q), 10)
		if i >= len(reqs) || reqs[i].Rule.Algorithm != ratelimit.Concurrency {
			policies = append(policies, ";w="...)
			policies = strconv.AppendInt(policies, seconds(w), 10)
		} else {
			policies = append(policies, `;qu="concurrent-requests"`...)
		}
		limits = appendSFString(limits, d.Rule)
		limits = append(limits, ";r="...)
		limits = strconv.AppendInt(limits, int64(max(0, d.Remaining)), 10)
		limits = append(limits, ";t="...)
		limits = strconv.AppendInt(limits, reset(d), 10)
	}
	if len(policies) == 0 {
		return
	}
	// One backing array for the five values; the keys are written in canonical form, as
	// Header.Set would, without Set canonicalising them again on every request.
	v := []string{
		string(policies),
		string(limits),
		strconv.Itoa(effQuota),
		strconv.Itoa(max(0, eff.Remaining)),
		strconv.FormatInt(reset(eff), 10),
	}
	h[headerPolicy], h[headerLimit] = v[0:1:1], v[1:2:2]
	h[headerXLimit], h[headerXRemaining], h[headerXReset] = v[2:3:3], v[3:4:4], v[4:5:5]
}

// The fields SetHeaders writes, as http.CanonicalHeaderKey spells them: header names are
// case-insensitive, and Go writes RateLimit-Policy as Ratelimit-Policy whatever it is given.
const (
	headerPolicy     = "Ratelimit-Policy"
	headerLimit      = "Ratelimit"
	headerXLimit     = "X-Ratelimit-Limit"
	headerXRemaining = "X-Ratelimit-Remaining"
	headerXReset     = "X-Ratelimit-Reset"
)

// quota is the q and w that d, decided under rule, advertises: the decision's limit and
// window, or, for a token bucket or GCRA whose burst exceeds its limit, the burst and the time
// to refill it (burst × window / limit): the bucket counts remaining up to the burst, and an r
// above q reads as a budget the client cannot have. A smaller burst keeps the rate.
func quota(d ratelimit.Decision, rule ratelimit.Rule) (int, time.Duration) {
	bucket := rule.Algorithm == ratelimit.TokenBucket || rule.Algorithm == ratelimit.GCRA
	if !bucket || rule.Burst <= rule.Limit || rule.Limit < 1 || d.Borrowing { // a ceiling: its own rate
		return d.Limit, d.Window
	}
	return rule.Burst, refillTime(rule.Window, rule.Burst, rule.Limit)
}

// refillTime is burst × window / limit rounded up to the nanosecond, computed in 128 bits:
// a 30-day window times a burst in the millions overflows 64. It saturates at the longest
// Duration.
func refillTime(window time.Duration, burst, limit int) time.Duration {
	hi, lo := bits.Mul64(uint64(window), uint64(burst))
	if hi >= uint64(limit) { // the quotient needs more than 64 bits
		return math.MaxInt64
	}
	quo, rem := bits.Div64(hi, lo, uint64(limit))
	if rem > 0 {
		quo++
	}
	if quo > math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(quo)
}

// reset is t: the seconds until the request would pass when denied, else until the budget is
// whole again.
func reset(d ratelimit.Decision) int64 {
	if !d.Allowed {
		return max(1, seconds(d.RetryAfter))
	}
	return seconds(d.Reset)
}

// seconds rounds up, so a client that waits that long never comes back too early.
func seconds(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}

// appendSFString appends s as a Structured Fields string. Policy ids are validated to plain
// characters; the escaping is for safety.
func appendSFString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}

// TooMany is the body of a 429 (RFC 9457 with the draft's violated-policies member).
type TooMany struct {
	Type             string   `json:"type"`
	Title            string   `json:"title"`
	Status           int      `json:"status"`
	Detail           string   `json:"detail"`
	ViolatedPolicies []string `json:"violated-policies"`
	RetryAfter       int64    `json:"retryAfterSeconds"`
	TraceID          string   `json:"traceId,omitempty"`
}

// WriteTooMany answers a request denied by its limits: 429 with the rate limit fields,
// Retry-After from the effective rule (never earlier than its t) and a problem body naming
// every enforced rule that denied.
func WriteTooMany(w http.ResponseWriter, reqs []ratelimit.Request, res ratelimit.Result, traceID string) {
	SetHeaders(w.Header(), reqs, res)
	after := reset(res.Decision)
	w.Header().Set("Retry-After", strconv.FormatInt(after, 10))
	body := TooMany{Type: QuotaExceeded, Title: "Too many requests", Status: http.StatusTooManyRequests,
		ViolatedPolicies: violated(res), RetryAfter: after, TraceID: traceID}
	eff := res.Decision
	body.Detail = fmt.Sprintf("%s allows %d per %s; retry in %ds", eff.Rule, eff.Limit, window(eff.Window), after)
	if eff.Borrowing { // a level of a hierarchy past its share, with its ceiling reached
		body.Detail = fmt.Sprintf("%s allows %d per %s with what it borrows; retry in %ds", eff.Rule, eff.Limit, window(eff.Window), after)
	}
	problem.WriteDetails(w, http.StatusTooManyRequests, body)
}

// Unavailable is the body of a 503 caused by the limiter rather than the client.
type Unavailable struct {
	Type       string `json:"type"`
	Title      string `json:"title"`
	Status     int    `json:"status"`
	Detail     string `json:"detail"`
	RetryAfter int64  `json:"retryAfterSeconds"`
	TraceID    string `json:"traceId,omitempty"`
}

// FailedClosed reports whether res was denied because a fail-closed rule could not reach the
// store: the gateway then answers 503 (WriteStoreUnavailable), not 429. The client did
// nothing wrong; everyone on the route is refused until the store is back.
func FailedClosed(res ratelimit.Result) bool {
	for _, d := range res.Rules {
		if !d.Allowed && d.Mode != ratelimit.Shadow && d.Path == ratelimit.PathFailClosed {
			return true
		}
	}
	return false
}

// WriteStoreUnavailable answers 503 with Retry-After for a request whose fail-closed limits
// cannot be checked. No RateLimit fields: there is no budget to report.
func WriteStoreUnavailable(w http.ResponseWriter, res ratelimit.Result, traceID string) {
	after := int64(1)
	for _, d := range res.Rules {
		if d.Path == ratelimit.PathFailClosed {
			after = max(after, seconds(d.RetryAfter))
		}
	}
	w.Header().Set("Retry-After", strconv.FormatInt(after, 10))
	problem.WriteDetails(w, http.StatusServiceUnavailable, Unavailable{
		Type: "about:blank", Title: "Service Unavailable", Status: http.StatusServiceUnavailable,
		Detail:     "the limits of this route cannot be checked right now and do not fail open",
		RetryAfter: after, TraceID: traceID,
	})
}

// violated lists the enforced rules that denied, in request order.
func violated(res ratelimit.Result) []string {
	var out []string
	for _, d := range res.Rules {
		if !d.Allowed && d.Mode != ratelimit.Shadow {
			out = append(out, d.Rule)
		}
	}
	return out
}

// window writes a window the way policies spell it: 1s, 1m, 1h, 30d; a window of mixed
// units as Go writes it (1m30s).
func window(d time.Duration) string {
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	case d >= time.Hour && d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d >= time.Minute && d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return d.String()
}

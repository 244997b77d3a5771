package pace

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Policy is one entry of a RateLimit-Policy field: a quota of Quota units per Window.
// Window is 0 for a policy that counts something other than requests over time (a
// concurrency limit, whose unit qu is "concurrent-requests").
type Policy struct {
	Name   string
	Quota  int64
	Window time.Duration
	Unit   string // qu; "" means requests
}

// Limit is one entry of a RateLimit field: Remaining units of the named policy, and Reset,
// the time until the policy's quota is whole again (or, on a refusal, until a request
// would pass).
type Limit struct {
	Name      string
	Remaining int64
	Reset     time.Duration
}

// maxSeconds bounds the numbers the fields may carry: larger ones are malformed rather than
// a wait of centuries (and would overflow a Duration).
const maxSeconds = 1<<31 - 1

// ParsePolicies reads the RateLimit-Policy fields of h (draft-ietf-httpapi-ratelimit-headers).
// ok is false when a field is present but malformed: the draft says to ignore it whole.
func ParsePolicies(h http.Header) (ps []Policy, ok bool) {
	items, ok := parseList(h.Values("RateLimit-Policy"))
	if !ok {
		return nil, false
	}
	for _, it := range items {
		p := Policy{Name: it.name}
		q, hasQ := it.int("q")
		w, hasW := it.int("w")
		if !hasQ || q < 0 || q > maxSeconds || it.has("w") && (!hasW || w <= 0 || w > maxSeconds) {
			return nil, false
		}
		p.Quota, p.Window, p.Unit = q, time.Duration(w)*time.Second, it.str("qu")
		ps = append(ps, p)
	}
	return ps, true
}

// ParseLimits reads the RateLimit fields of h. ok is false when a field is present but
// malformed (an entry without r or t, a negative or absurd number, broken syntax).
func ParseLimits(h http.Header) (ls []Limit, ok bool) {
	items, ok := parseList(h.Values("RateLimit"))
	if !ok {
		return nil, false
	}
	for _, it := range items {
		r, hasR := it.int("r")
		t, hasT := it.int("t")
		if !hasR || !hasT || r < 0 || r > maxSeconds || t < 0 || t > maxSeconds {
			return nil, false
		}
		ls = append(ls, Limit{Name: it.name, Remaining: r, Reset: time.Duration(t) * time.Second})
	}
	return ls, true
}

// RetryAfter reads a Retry-After field (RFC 9110): delay-seconds, or an HTTP-date taken
// relative to now (a date in the past means now). ok is false when it is absent or malformed.
func RetryAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s < 0 || s > maxSeconds {
			return 0, false
		}
		return time.Duration(s) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), maxSeconds*time.Second), true
}

// item is one member of a Structured Fields list (RFC 8941): a name (the bare item, a
// string or a token) and its parameters.
type item struct {
	name   string
	params []param
}

// param is one parameter: an integer (isInt), a string or token (s), or anything else the
// pacer does not read (a decimal, a byte sequence, a boolean), kept only as present.
type param struct {
	key   string
	n     int64
	isInt bool
	s     string
}

// has reports whether the parameter is present, whatever its type.
func (it item) has(key string) bool {
	for _, p := range it.params {
		if p.key == key {
			return true
		}
	}
	return false
}

// int returns an integer parameter; false when it is absent or not an integer.
func (it item) int(key string) (int64, bool) {
	for _, p := range it.params {
		if p.key == key {
			return p.n, p.isInt
		}
	}
	return 0, false
}

func (it item) str(key string) string {
	for _, p := range it.params {
		if p.key == key {
			return p.s
		}
	}
	return ""
}

// parseList parses field lines as one Structured Fields list (lines join with commas, as
// RFC 9110 combines repeated fields). No lines is an empty list; ok is false on any syntax
// error, or on a member whose bare item is not a string or token (policy names are).
func parseList(lines []string) (items []item, ok bool) {
	if len(lines) == 0 {
		return nil, true
	}
	p := sfParser{s: strings.Join(lines, ",")}
	p.skip(" \t")
	if p.done() {
		return nil, true
	}
	for {
		it, ok := p.item()
		if !ok {
			return nil, false
		}
		items = append(items, it)
		p.skip(" \t")
		if p.done() {
			return items, true
		}
		if !p.eat(',') {
			return nil, false
		}
		p.skip(" \t")
		if p.done() { // a trailing comma
			return nil, false
		}
	}
}

// sfParser reads the subset of RFC 8941 the RateLimit fields use; it never panics and
// only moves forward, so malformed input ends it in one pass.
type sfParser struct {
	s string
	i int
}

func (p *sfParser) done() bool { return p.i >= len(p.s) }

func (p *sfParser) skip(set string) {
	for !p.done() && strings.IndexByte(set, p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *sfParser) eat(c byte) bool {
	if !p.done() && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *sfParser) item() (item, bool) {
	var it item
	v, ok := p.bare()
	if !ok || !v.name {
		return it, false
	}
	it.name = v.s
	for p.eat(';') {
		p.skip(" ")
		key, ok := p.key()
		if !ok {
			return it, false
		}
		prm := param{key: key}
		if p.eat('=') {
			v, ok := p.bare()
			if !ok {
				return it, false
			}
			prm.n, prm.isInt, prm.s = v.n, v.isInt, v.s
		}
		it.params = append(it.params, prm)
	}
	return it, true
}

// bareItem is a parsed bare item; name marks a string or token.
type bareItem struct {
	s     string
	n     int64
	isInt bool
	name  bool
}

func (p *sfParser) bare() (bareItem, bool) {
	if p.done() {
		return bareItem{}, false
	}
	switch c := p.s[p.i]; {
	case c == '"':
		s, ok := p.str()
		return bareItem{s: s, name: true}, ok
	case c == '-' || isDigit(c):
		return p.number()
	case c == '*' || isAlpha(c):
		start := p.i
		for !p.done() && (isTchar(p.s[p.i]) || p.s[p.i] == ':' || p.s[p.i] == '/') {
			p.i++
		}
		return bareItem{s: p.s[start:p.i], name: true}, true
	case c == ':': // a byte sequence, such as a partition key: kept as present
		end := strings.IndexByte(p.s[p.i+1:], ':')
		if end < 0 {
			return bareItem{}, false
		}
		p.i += end + 2
		return bareItem{}, true
	case c == '?':
		if p.i+1 < len(p.s) && (p.s[p.i+1] == '0' || p.s[p.i+1] == '1') {
			p.i += 2
			return bareItem{}, true
		}
	}
	return bareItem{}, false
}

func (p *sfParser) str() (string, bool) {
	p.i++ // the opening quote
	var b strings.Builder
	for !p.done() {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '"':
			return b.String(), true
		case c == '\\':
			if p.done() || p.s[p.i] != '"' && p.s[p.i] != '\\' {
				return "", false
			}
			b.WriteByte(p.s[p.i])
			p.i++
		case c < 0x20 || c > 0x7e:
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return "", false // unterminated
}

// number reads an integer of at most 15 digits, or a decimal (read past, not kept).
func (p *sfParser) number() (bareItem, bool) {
	start := p.i
	p.eat('-')
	digits := p.i
	for !p.done() && isDigit(p.s[p.i]) {
		p.i++
	}
	if p.i == digits || p.i-digits > 15 {
		return bareItem{}, false
	}
	if p.eat('.') {
		frac := p.i
		for !p.done() && isDigit(p.s[p.i]) {
			p.i++
		}
		return bareItem{}, p.i > frac && p.i-frac <= 3
	}
	n, err := strconv.ParseInt(p.s[start:p.i], 10, 64)
	return bareItem{n: n, isInt: true}, err == nil
}

func (p *sfParser) key() (string, bool) {
	start := p.i
	if p.done() || !(p.s[p.i] == '*' || p.s[p.i] >= 'a' && p.s[p.i] <= 'z') {
		return "", false
	}
	for !p.done() {
		c := p.s[p.i]
		if !(c >= 'a' && c <= 'z' || isDigit(c) || strings.IndexByte("_-.*", c) >= 0) {
			break
		}
		p.i++
	}
	return p.s[start:p.i], true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// isTchar is RFC 9110's tchar.
func isTchar(c byte) bool {
	return isAlpha(c) || isDigit(c) || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

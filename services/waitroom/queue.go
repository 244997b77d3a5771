package waitroom

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"boxoffice.dev/platform/problem"
	"boxoffice.dev/services/waitroom/pass"
)

// Queue keeps every event's queue in Redis and admits from it at each event's rate. Every
// read-modify-write is one Lua script, so replicas never interleave inside one; an event's
// keys share the hash tag {<event id>} (one Cluster slot per script) and each has a TTL
// (QueueTTL). Only a sale opened by Open can be joined. Set the fields, then use the Queue
// from any goroutine. The keys, and why: docs/lessons/waiting-room.md, "The queue".
type Queue struct {
	// Redis stores the queues. Required.
	Redis redis.UniversalClient
	// Key signs admission passes. Required.
	Key ed25519.PrivateKey
	// Now is the clock admissions and pass expiry are measured by; nil means the Redis
	// server's TIME, one clock for every replica. Tests inject a clock to step through
	// seconds; replicas with their own clocks should leave it nil.
	Now func() time.Time
	// DefaultRate is the admissions per second of an event no admin has set; 0 means
	// DefaultAdmitPerSecond.
	DefaultRate int
	// PassTTL is how long an admission (and its pass) lasts; 0 means DefaultPassTTL.
	PassTTL time.Duration
	// QueueTTL is how long an idle event's keys live; 0 means DefaultQueueTTL.
	QueueTTL time.Duration
	// MaxEventsPerTick bounds the events one AdmitAll visits, taking the listed events in
	// turns when there are more; 0 means DefaultMaxEventsPerTick.
	MaxEventsPerTick int
	// MeterProvider receives boxoffice.waitroom.admissions, fans admitted by this replica per
	// event (sum over replicas for the total), and boxoffice.waitroom.waiting, the fans each
	// event's queue held when this replica last admitted from it (take the max over
	// replicas); nil means none.
	MeterProvider metric.MeterProvider

	once    sync.Once
	metrics *queueMetrics
	// turn is where the next AdmitAll starts in the sorted list of events.
	turn atomic.Uint64
}

// eventsKey lists the events with a queue, for the admitter; see AdmitAll.
const eventsKey = "wr:events"

type keys struct{ seq, waiting, admitted, rate, slot, sale string }

func keysFor(event string) keys {
	p := "wr:{" + event + "}:"
	return keys{seq: p + "seq", waiting: p + "waiting", admitted: p + "admitted", rate: p + "rate", slot: p + "slot", sale: p + "sale"}
}

// luaNow is the clock every script reads: the caller's milliseconds, or the server's TIME
// when the caller passes -1 (Queue.Now is nil).
const luaNow = `
local function now_ms(arg)
  local n = tonumber(arg)
  if n >= 0 then return n end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`

// The scripts answer {state, position, admitted_at_ms, rate}; state 0 is "not in the queue",
// -1 "no sale open to join".
const (
	stateNoSale = iota - 1
	stateNone
	stateWaiting
	stateAdmitted
	stateExpired
)

// joinScript puts ARGV[1] at the back of the queue unless already in it (same position when
// joining twice) or admitted with a live pass; a lapsed admission goes to the back again. A
// new place needs the sale open (KEYS[5]), a place taken is kept after it closes, and a join
// keeps the sale open for at least the queue TTL.
// KEYS: waiting, admitted, seq, rate, sale. ARGV: account, now, pass TTL ms, queue TTL s, default rate.
var joinScript = redis.NewScript(luaNow + `
local now = now_ms(ARGV[2])
local rate = tonumber(redis.call('GET', KEYS[4]) or ARGV[5])
local at = redis.call('HGET', KEYS[2], ARGV[1])
if at and tonumber(at) + tonumber(ARGV[3]) > now then
  return {2, 0, tonumber(at), rate}
end
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  if redis.call('EXISTS', KEYS[5]) == 0 then return {-1, 0, 0, rate} end
  redis.call('ZADD', KEYS[1], redis.call('INCR', KEYS[3]), ARGV[1])
end
if at then redis.call('HDEL', KEYS[2], ARGV[1]) end
for i = 1, 4 do redis.call('EXPIRE', KEYS[i], ARGV[4]) end
local left = redis.call('TTL', KEYS[5])
if left >= 0 and left < tonumber(ARGV[4]) then redis.call('EXPIRE', KEYS[5], ARGV[4]) end
return {1, redis.call('ZRANK', KEYS[1], ARGV[1]) + 1, 0, rate}
`)

// openScript makes KEYS[1] (an event's sale key) last until ARGV[1] ms, or the queue TTL
// from now when ARGV[1] is -1, unless it already lasts longer: opening never shortens a sale.
// A time already past leaves the sale as it was. It answers 1 when the sale is open after.
// The expiry is relative to now, so an injected clock and the server's agree on it.
// ARGV: until ms, now, queue TTL ms.
var openScript = redis.NewScript(luaNow + `
local now = now_ms(ARGV[2])
local until_ms = tonumber(ARGV[1])
if until_ms < 0 then until_ms = now + tonumber(ARGV[3]) end
local left = redis.call('PTTL', KEYS[1])
if until_ms <= now or left == -1 or (left >= 0 and now + left >= until_ms) then
  return redis.call('EXISTS', KEYS[1])
end
redis.call('SET', KEYS[1], '1', 'PX', until_ms - now)
return 1
`)

// statusScript reads ARGV[1]'s place without changing anything.
// KEYS: waiting, admitted, rate. ARGV: account, now, pass TTL ms, default rate.
var statusScript = redis.NewScript(luaNow + `
local rate = tonumber(redis.call('GET', KEYS[3]) or ARGV[4])
local at = redis.call('HGET', KEYS[2], ARGV[1])
if at then
  local state = 2
  if tonumber(at) + tonumber(ARGV[3]) <= now_ms(ARGV[2]) then state = 3 end
  return {state, 0, tonumber(at), rate}
end
local r = redis.call('ZRANK', KEYS[1], ARGV[1])
if r then return {1, r + 1, 0, rate} end
return {0, 0, 0, rate}
`)

// admitScript admits the head of the queue, up to the rate per second, and answers how many
// it admitted (-1 when nobody waits: the queue drained or expired) and how many still wait.
// The budget is one second's slot in Redis that every replica spends from, and the slot only
// moves forward, so N replicas admit at the rate (docs/lessons/waiting-room.md, "The queue").
// KEYS: waiting, admitted, slot, rate. ARGV: now, default rate, queue TTL s.
var admitScript = redis.NewScript(luaNow + `
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0} end
local now = now_ms(ARGV[1])
local slot = math.floor(now / 1000)
local rate = tonumber(redis.call('GET', KEYS[4]) or ARGV[2])
local cur = redis.call('HMGET', KEYS[3], 'slot', 'count')
local cur_slot, count = tonumber(cur[1]) or -1, tonumber(cur[2]) or 0
if slot > cur_slot then cur_slot, count = slot, 0 end
local room = rate - count
if room <= 0 then return {0, redis.call('ZCARD', KEYS[1])} end
local popped = redis.call('ZPOPMIN', KEYS[1], room)
local n = #popped / 2
if n == 0 then return {0, 0} end
for i = 1, #popped, 2 do redis.call('HSET', KEYS[2], popped[i], now) end
redis.call('HSET', KEYS[3], 'slot', cur_slot, 'count', count + n)
for i = 1, 4 do redis.call('EXPIRE', KEYS[i], ARGV[3]) end
return {n, redis.call('ZCARD', KEYS[1])}
`)

// Join puts user in event's queue, or answers their place if already in it. Only the queue
// of an open sale (see Open) takes new places: any other event is NotFound.
func (q *Queue) Join(ctx context.Context, event, user string) (Status, error) {
	if err := q.check(event, user); err != nil {
		return Status{}, err
	}
	k := keysFor(event)
	res, err := joinScript.Run(ctx, q.Redis, []string{k.waiting, k.admitted, k.seq, k.rate, k.sale},
		user, q.nowArg(), q.passTTL().Milliseconds(), seconds(q.queueTTL()), q.defaultRate()).Int64Slice()
	if err != nil {
		return Status{}, fmt.Errorf("join %s: %w", event, err)
	}
	if len(res) > 0 && res[0] == stateNoSale {
		return Status{}, problem.New(problem.NotFound, "no waiting room for event %s", event)
	}
	// Outside the script: wr:events lives in another cluster slot. Adding on every join
	// keeps the event listed even if the admitter pruned it a moment ago (see unlist); its
	// TTL outlives every queue it lists, since each join refreshes both.
	if err := q.list(ctx, event); err != nil {
		return Status{}, fmt.Errorf("join %s: %w", event, err)
	}
	return q.status(event, user, res)
}

// Status answers user's place in event's queue, with a pass when admitted; NotFound when
// user has not joined.
func (q *Queue) Status(ctx context.Context, event, user string) (Status, error) {
	if err := q.check(event, user); err != nil {
		return Status{}, err
	}
	k := keysFor(event)
	res, err := statusScript.Run(ctx, q.Redis, []string{k.waiting, k.admitted, k.rate},
		user, q.nowArg(), q.passTTL().Milliseconds(), q.defaultRate()).Int64Slice()
	if err != nil {
		return Status{}, fmt.Errorf("queue status %s: %w", event, err)
	}
	if res[0] == stateNone {
		return Status{}, problem.New(problem.NotFound, "not in the queue of %s: join it first", event)
	}
	return q.status(event, user, res)
}

// status turns a script's answer into a Status, signing the pass of an admitted fan.
func (q *Queue) status(event, user string, res []int64) (Status, error) {
	if len(res) != 4 {
		return Status{}, fmt.Errorf("queue %s: script answered %v", event, res)
	}
	st := Status{EventID: event, Position: res[1]}
	switch res[0] {
	case stateWaiting:
		st.State = Waiting
		if wait, ok := EstimateWait(res[1], int(res[3])); ok {
			st.EstimatedWait = &wait
		}
	case stateAdmitted:
		expires := time.UnixMilli(res[2] + q.passTTL().Milliseconds()).UTC()
		st.State, st.PassExpiresAt = Admitted, &expires
		st.Pass = pass.Sign(q.Key, pass.Pass{EventID: event, User: user, ExpiresAt: expires})
	case stateExpired:
		st.State = Expired
	default:
		return Status{}, fmt.Errorf("queue %s: unknown state %d", event, res[0])
	}
	return st, nil
}

// Admit admits the head of event's queue within this second's budget and reports how many
// it admitted; -1 when the event has no queue any more.
func (q *Queue) Admit(ctx context.Context, event string) (int, error) {
	n, _, err := q.admit(ctx, event)
	return n, err
}

// admit is Admit that also answers how many fans still wait.
func (q *Queue) admit(ctx context.Context, event string) (admitted int, waiting int64, err error) {
	k := keysFor(event)
	res, err := admitScript.Run(ctx, q.Redis, []string{k.waiting, k.admitted, k.slot, k.rate},
		q.nowArg(), q.defaultRate(), seconds(q.queueTTL())).Int64Slice()
	if err != nil {
		return 0, 0, fmt.Errorf("admit %s: %w", event, err)
	}
	if len(res) != 2 {
		return 0, 0, fmt.Errorf("admit %s: answer %v, want [admitted waiting]", event, res)
	}
	return int(res[0]), res[1], nil
}

// AdmitAll runs Admit for at most MaxEventsPerTick of the listed events, taking them in turns
// over successive calls, and reports how many fans it admitted in all. A tick's work is thus
// bounded whatever is listed, at the price of visiting an event every few ticks, which costs
// it nothing while it is visited once a second (its budget is per second). An event nobody
// waits in any more is dropped from the list (see unlist).
func (q *Queue) AdmitAll(ctx context.Context) (int, error) {
	events, err := q.Redis.SMembers(ctx, eventsKey).Result()
	if err != nil {
		return 0, fmt.Errorf("list queued events: %w", err)
	}
	total := 0
	for _, event := range q.turnOf(events) {
		n, waiting, err := q.admit(ctx, event)
		if err != nil {
			return total, err
		}
		q.meters().sawWaiting(event, waiting, n < 0)
		if n < 0 {
			if err := q.unlist(ctx, event); err != nil {
				return total, err
			}
			continue
		}
		if n > 0 {
			q.meters().admissions.Add(ctx, int64(n), metric.WithAttributes(attribute.String("event", event)))
		}
		total += n
	}
	return total, nil
}

// turnOf is this call's share of events: all of them, or MaxEventsPerTick of them taken in
// sorted order from where the previous call stopped.
func (q *Queue) turnOf(events []string) []string {
	limit := q.maxEventsPerTick()
	if len(events) <= limit {
		return events
	}
	slices.Sort(events)
	start := int((q.turn.Add(uint64(limit)) - uint64(limit)) % uint64(len(events)))
	turn := make([]string, 0, limit)
	for i := range limit {
		turn = append(turn, events[(start+i)%len(events)])
	}
	return turn
}

// unlist drops event from the admitter's list once its queue is empty. A join racing the
// drop adds its fan (in the script) before listing the event (SADD): when that SADD lands
// before the SREM, the fan is already in the queue, so the check after the SREM finds them
// and lists the event again; when it lands after, it re-lists the event itself. Either way
// no fan is left waiting in an unlisted queue.
func (q *Queue) unlist(ctx context.Context, event string) error {
	if err := q.Redis.SRem(ctx, eventsKey, event).Err(); err != nil {
		return fmt.Errorf("unlist %s: %w", event, err)
	}
	waiting, err := q.Redis.Exists(ctx, keysFor(event).waiting).Result()
	if err != nil {
		return fmt.Errorf("unlist %s: %w", event, err)
	}
	if waiting > 0 {
		return q.list(ctx, event)
	}
	return nil
}

// list adds event to the admitter's list and keeps the list alive for the queue TTL.
func (q *Queue) list(ctx context.Context, event string) error {
	_, err := q.Redis.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.SAdd(ctx, eventsKey, event)
		p.Expire(ctx, eventsKey, q.queueTTL())
		return nil
	})
	if err != nil {
		return fmt.Errorf("list %s: %w", event, err)
	}
	return nil
}

// Settings is an event's queue as an admin sees it.
type Settings struct {
	EventID        string `json:"event_id"`
	AdmitPerSecond int    `json:"admit_per_second"`
	Waiting        int64  `json:"waiting"`
	Admitted       int64  `json:"admitted"`
}

// Open opens event's sale to joins until at least until, or for the queue TTL from now
// when until is zero, and reports whether the sale is open after the call; joins keep it
// open for the queue TTL after the last one. Opening again never shortens a sale, and an
// until already past changes nothing. Sales are opened by the catalog's flash sales
// (SaleFollower) and by an admin setting the rate.
func (q *Queue) Open(ctx context.Context, event string, until time.Time) (bool, error) {
	if err := ValidateEventID("id", event); err != nil {
		return false, err
	}
	untilArg := int64(-1)
	if !until.IsZero() {
		untilArg = until.UnixMilli()
	}
	open, err := openScript.Run(ctx, q.Redis, []string{keysFor(event).sale}, untilArg, q.nowArg(), q.queueTTL().Milliseconds()).Bool()
	if err != nil {
		return false, fmt.Errorf("open sale %s: %w", event, err)
	}
	return open, nil
}

// SetRate sets event's admissions per second (0 pauses admission) and opens its sale (see
// Open): an admin who sets a queue's rate means fans to join it.
func (q *Queue) SetRate(ctx context.Context, event string, rate int) error {
	if err := ValidateEventID("id", event); err != nil {
		return err
	}
	if err := ValidateRate("admit_per_second", rate); err != nil {
		return err
	}
	if err := q.Redis.Set(ctx, keysFor(event).rate, rate, q.queueTTL()).Err(); err != nil {
		return fmt.Errorf("set rate of %s: %w", event, err)
	}
	_, err := q.Open(ctx, event, time.Time{})
	return err
}

// Settings reads event's rate and how many fans wait and are admitted.
func (q *Queue) Settings(ctx context.Context, event string) (Settings, error) {
	if err := ValidateEventID("id", event); err != nil {
		return Settings{}, err
	}
	k := keysFor(event)
	var rate *redis.StringCmd
	var waiting, admitted *redis.IntCmd
	_, err := q.Redis.Pipelined(ctx, func(p redis.Pipeliner) error {
		rate = p.Get(ctx, k.rate)
		waiting = p.ZCard(ctx, k.waiting)
		admitted = p.HLen(ctx, k.admitted)
		return nil
	})
	if err != nil && err != redis.Nil {
		return Settings{}, fmt.Errorf("queue settings of %s: %w", event, err)
	}
	s := Settings{EventID: event, AdmitPerSecond: q.defaultRate(), Waiting: waiting.Val(), Admitted: admitted.Val()}
	if v, err := rate.Int(); err == nil {
		s.AdmitPerSecond = v
	}
	return s, nil
}

// meters are the queue's instruments, made on first use so a Queue needs no constructor.
func (q *Queue) meters() *queueMetrics {
	q.once.Do(func() {
		mp := q.MeterProvider
		if mp == nil {
			mp = noop.NewMeterProvider()
		}
		q.metrics = &queueMetrics{waiting: map[string]int64{}}
		m := mp.Meter("boxoffice.dev/services/waitroom")
		// Instrument errors only come from an invalid name or unit, fixed here: the SDK then
		// returns a working no-op instrument, so it is safe to ignore.
		q.metrics.admissions, _ = m.Int64Counter("boxoffice.waitroom.admissions",
			metric.WithDescription("Fans admitted from an event's queue."), metric.WithUnit("{fan}"))
		_, _ = m.Int64ObservableGauge("boxoffice.waitroom.waiting",
			metric.WithDescription("Fans waiting in an event's queue when this replica last admitted from it."),
			metric.WithUnit("{fan}"), metric.WithInt64Callback(q.metrics.observeWaiting))
	})
	return q.metrics
}

// queueMetrics holds the admissions counter and the queue lengths AdmitAll last saw.
type queueMetrics struct {
	admissions metric.Int64Counter
	mu         sync.Mutex
	waiting    map[string]int64 // event → fans waiting; only listed events, so bounded as they are
}

// sawWaiting records the length of event's queue; gone drops the event's series.
func (m *queueMetrics) sawWaiting(event string, waiting int64, gone bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if gone {
		delete(m.waiting, event)
		return
	}
	m.waiting[event] = waiting
}

func (m *queueMetrics) observeWaiting(_ context.Context, o metric.Int64Observer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for event, n := range m.waiting {
		o.Observe(n, metric.WithAttributes(attribute.String("event", event)))
	}
	return nil
}

func (q *Queue) check(event, user string) error {
	if user == "" {
		return problem.New(problem.Unauthorized, "sign in to join the queue")
	}
	return ValidateEventID("event_id", event)
}

func (q *Queue) nowArg() int64 {
	if q.Now == nil {
		return -1
	}
	return q.Now().UnixMilli()
}

func (q *Queue) defaultRate() int { return cmp.Or(q.DefaultRate, DefaultAdmitPerSecond) }

func (q *Queue) passTTL() time.Duration { return cmp.Or(q.PassTTL, DefaultPassTTL) }

func (q *Queue) maxEventsPerTick() int { return cmp.Or(q.MaxEventsPerTick, DefaultMaxEventsPerTick) }

func (q *Queue) queueTTL() time.Duration { return cmp.Or(q.QueueTTL, DefaultQueueTTL) }

func seconds(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) }

package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"boxoffice.dev/platform/control"
	"boxoffice.dev/platform/redisconn"
)

// The knob "store" puts the limiter's store (Redis) in one of these states. On a store the
// system's own process started (`boxoffice up` with a redis-server of its own) they are
// real faults of the process: a stall is SIGSTOP (the kernel still accepts connections,
// nothing answers), a kill is SIGKILL (connections refused) and up is SIGCONT, or a restart
// on the same port and directory. On any other store (REDIS_URL, compose) the playground can
// only stall it, with CLIENT PAUSE WRITE: every limiter decision is a script that writes, so
// every decision waits.
const (
	StoreUp      = "up"
	StoreStalled = "stalled"
	StoreKilled  = "killed"
)

// StoreSubject is the NATS subject on which the process that started the limiter's store
// takes the state to put it in. Nobody answers there when no process owns the store.
var StoreSubject = control.Subject("redis")

// storePauseBound is how long a CLIENT PAUSE lasts unless the run lifts it: the longest run,
// so that a pause nobody lifts (its playground died, its journal lost) ends by itself.
const storePauseBound = 10 * time.Minute

// storeTimeout bounds one change of the store's state: a restart waits for the new process
// to answer PING.
const storeTimeout = 15 * time.Second

// StoreProcess is a store process its owner may fault (redisconn.Server). Kill and Restart
// do nothing when the process is already gone, or already running.
type StoreProcess interface {
	Pause() error
	Continue() error
	Kill() error
	Restart(ctx context.Context) error
	PID() int
}

// storeRequest asks the store's owner to put it in State; "" asks who owns it and changes
// nothing.
type storeRequest struct {
	State string `json:"state"`
}

// storeReply is the owner's answer: who it is, the process's id once the state is in force,
// or why it could not be put.
type storeReply struct {
	Owner string `json:"owner"`
	PID   int    `json:"pid"`
	Error string `json:"error,omitempty"`
}

// ServeStoreFaults puts p in the states asked on StoreSubject, one request at a time, and
// answers each, until stop is called. owner names the process for the playground's timeline
// ("boxoffice up"). A request that cannot be read is answered with an error, never applied.
func ServeStoreFaults(nc *nats.Conn, p StoreProcess, owner string, log *slog.Logger) (stop func(), err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sub, err := nc.Subscribe(StoreSubject, func(m *nats.Msg) {
		reply := storeReply{Owner: owner}
		var req storeRequest
		if err := json.Unmarshal(m.Data, &req); err != nil {
			reply.Error = "the request is not JSON: " + err.Error()
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
			err = putStore(ctx, p, req.State)
			cancel()
			if err != nil {
				reply.Error = err.Error()
				log.Warn("store fault", "state", req.State, "error", err)
			} else if req.State != "" {
				log.Info("store fault", "state", req.State, "pid", p.PID())
			}
		}
		reply.PID = p.PID()
		b, _ := json.Marshal(reply)
		_ = m.Respond(b)
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", StoreSubject, err)
	}
	if err := nc.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("subscribe %s: %w", StoreSubject, err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

// putStore puts p in state from whatever state it is in: a stall or up brings a killed
// process back first.
func putStore(ctx context.Context, p StoreProcess, state string) error {
	switch state {
	case "":
		return nil
	case StoreUp:
		if err := p.Restart(ctx); err != nil {
			return err
		}
		return p.Continue()
	case StoreStalled:
		if err := p.Restart(ctx); err != nil {
			return err
		}
		return p.Pause()
	case StoreKilled:
		return p.Kill()
	}
	return fmt.Errorf("store state %q: want %s, %s or %s", state, StoreUp, StoreStalled, StoreKilled)
}

// errNotOwned is setStore's answer when no process owns the store: see setStore.
var errNotOwned = errors.New("no process of this system owns the store")

// setStore puts the limiter's store in state and says how, for the timeline: through the
// process that owns it when one answers on StoreSubject, else with CLIENT PAUSE on the
// target's Redis (a stall and its end only).
func (s *system) setStore(ctx context.Context, state string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	r, err := s.askStoreOwner(ctx, state)
	if err == nil {
		return ownedStore(state, r), nil
	}
	if !errors.Is(err, errNotOwned) {
		return "", err
	}
	return s.pauseStore(ctx, state)
}

// storeOwner says how the store's states are put, changing nothing.
func (s *system) storeOwner(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	r, err := s.askStoreOwner(ctx, "")
	switch {
	case errors.Is(err, errNotOwned):
		return fmt.Sprintf("the limiter's store is not this system's process (REDIS_URL, or its own container): %s is CLIENT PAUSE WRITE on it, lifted by %s; %s is not available", StoreStalled, StoreUp, StoreKilled), nil
	case err != nil:
		return "", err
	}
	return fmt.Sprintf("the limiter's store is redis-server pid %d, started by %s: %s is SIGSTOP, %s is SIGKILL, %s is SIGCONT or a restart on the same port", r.PID, r.Owner, StoreStalled, StoreKilled, StoreUp), nil
}

// askStoreOwner sends state to the store's owner over NATS; errNotOwned when there is no
// NATS or nobody answers.
func (s *system) askStoreOwner(ctx context.Context, state string) (storeReply, error) {
	if s.nc == nil {
		return storeReply{}, errNotOwned
	}
	b, _ := json.Marshal(storeRequest{State: state})
	m, err := s.nc.RequestWithContext(ctx, StoreSubject, b)
	if errors.Is(err, nats.ErrNoResponders) {
		return storeReply{}, errNotOwned
	}
	if err != nil {
		return storeReply{}, fmt.Errorf("ask the store's owner: %w", err)
	}
	var r storeReply
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return storeReply{}, fmt.Errorf("the store's owner answered: %w", err)
	}
	if r.Error != "" {
		return r, fmt.Errorf("%s could not put the store %s: %s", r.Owner, state, r.Error)
	}
	return r, nil
}

// ownedStore says what the owner did.
func ownedStore(state string, r storeReply) string {
	switch state {
	case StoreStalled:
		return fmt.Sprintf("redis-server (pid %d) stopped with SIGSTOP: it holds its connections and answers nothing", r.PID)
	case StoreKilled:
		return "redis-server killed with SIGKILL: every connection is refused"
	}
	return fmt.Sprintf("redis-server (pid %d) answering again on its port: resumed, or restarted if it was killed (then empty: its counters were in memory)", r.PID)
}

// pauseStore stalls the target's Redis with CLIENT PAUSE WRITE, or lifts the pause: the
// faults a playground can put on a store it does not own.
func (s *system) pauseStore(ctx context.Context, state string) (string, error) {
	switch {
	case state == StoreKilled:
		return "", errors.New("the limiter's store is not this system's process (REDIS_URL, or its own container), so the playground can stall it but not kill it: run `boxoffice up` without REDIS_URL, with redis-server installed, to kill and restart it")
	case s.t.Redis == "":
		return "", errors.New("the limiter's store is not this system's process and the target names no Redis URL (REDIS_URL) to pause it")
	case strings.HasPrefix(s.t.Redis, redisconn.ClusterScheme+"://"):
		return "", errors.New("the limiter's store is a Redis Cluster: pause each of its nodes by hand (CLIENT PAUSE)")
	}
	if s.redis == nil {
		rd, err := redisconn.Dial(s.t.Redis)
		if err != nil {
			return "", fmt.Errorf("the limiter's store: %w", err)
		}
		s.redis = rd
	}
	if state == StoreStalled {
		ms := strconv.FormatInt(storePauseBound.Milliseconds(), 10)
		if err := s.redis.Client.Do(ctx, "CLIENT", "PAUSE", ms, "WRITE").Err(); err != nil {
			return "", fmt.Errorf("CLIENT PAUSE: %w", err)
		}
		return fmt.Sprintf("CLIENT PAUSE WRITE on the limiter's store: every write waits, and every limiter decision is a script that writes (for %v at most)", storePauseBound), nil
	}
	if err := s.redis.Client.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
		return "", fmt.Errorf("CLIENT UNPAUSE: %w", err)
	}
	return "CLIENT UNPAUSE on the limiter's store: writes go through again", nil
}

// applyStore puts the knob's store state in force. The first change registers putting the
// store back up when the run ends; until then a store asked to be up, as found, is left
// alone, and the timeline says how this system's store can be faulted.
func (r *Run) applyStore(ctx context.Context) error {
	state := r.knob("store")
	r.mu.Lock()
	touched := r.storeTouched
	r.mu.Unlock()
	if !touched && state == StoreUp {
		how, err := r.sys.storeOwner(ctx)
		if err != nil {
			return err
		}
		r.event(r.elapsed(), "store", how)
		return nil
	}
	if !touched {
		if err := r.undo(entry{Kind: entryStore, ID: storeID}); err != nil {
			return err
		}
		r.mu.Lock()
		r.storeTouched = true
		r.mu.Unlock()
	}
	how, err := r.sys.setStore(ctx, state)
	if err != nil {
		return err
	}
	r.event(r.elapsed(), "store", how)
	return nil
}

// storeID names the limiter's store in the put-back journal.
const storeID = "redis"

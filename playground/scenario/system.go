package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"

	"boxoffice.dev/platform/control"
	"boxoffice.dev/platform/redisconn"
)

// system turns the running system's knobs: the gateway's admin API and the services' control
// hooks. Every call is bounded by the HTTP client's timeout. It is safe for concurrent use.
type system struct {
	t     Target
	actor string // how the gateway's audit trail names the changes: the Admin-Actor header
	http  *http.Client
	nc    *nats.Conn          // nil: each instance's /control over HTTP
	redis *redisconn.Resolved // the target's Redis, once a stall has needed it (see pauseStore)
}

func newSystem(t Target) (*system, error) {
	s := &system{t: t, actor: "playground", http: &http.Client{Timeout: 10 * time.Second}}
	if t.NATS != "" {
		nc, err := nats.Connect(t.NATS, nats.Name("playground"), nats.Timeout(3*time.Second))
		if err != nil {
			return nil, fmt.Errorf("connect nats: %w", err)
		}
		s.nc = nc
	}
	return s, nil
}

func (s *system) close() {
	if s.nc != nil {
		s.nc.Close()
	}
	if s.redis != nil {
		_ = s.redis.Close()
	}
}

// adminLimit is the admin API's JSON shape of a gateway limit (gateway/policy.Limit).
type adminLimit struct {
	ID             string `json:"id"`
	Key            string `json:"key"`
	Algorithm      string `json:"algorithm"`
	Rate           string `json:"rate"`
	Burst          int    `json:"burst,omitempty"`
	OnStoreFailure string `json:"on_store_failure,omitempty"`
	Mode           string `json:"mode,omitempty"`
	EnforcePercent *int   `json:"enforce_percent,omitempty"`
	// Queue shapes instead of refusing (policy.Queue); nil refuses.
	Queue *adminQueue `json:"queue,omitempty"`
}

// adminQueue is a gcra limit's queue in the admin API (policy.Queue).
type adminQueue struct {
	Size     int    `json:"size"`
	MaxDelay string `json:"max_delay,omitempty"`
	NoDelay  bool   `json:"nodelay,omitempty"`
}

// admin sends one admin API request; in, when not nil, is the JSON body and out, when not
// nil, receives the JSON answer. A 404 is reported as errNotFound.
func (s *system) admin(ctx context.Context, method, path string, in, out any) error {
	if s.t.Admin == "" {
		return errors.New("the target has no gateway admin API")
	}
	return s.call(ctx, method, s.t.Admin+path, http.Header{"Authorization": {"Bearer " + s.t.AdminToken}, "Admin-Actor": {s.actor}}, in, out)
}

var errNotFound = errors.New("not found")

func (s *system) call(ctx context.Context, method, url string, header http.Header, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", method, url, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%s %s: %w", method, url, errNotFound)
	case resp.StatusCode/100 != 2:
		return fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, bytes.TrimSpace(b))
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: decode: %w", method, url, err)
		}
	}
	return nil
}

// routeLimits returns the limits attached to a gateway route.
func (s *system) routeLimits(ctx context.Context, route string) ([]string, error) {
	var r struct {
		Limits []string `json:"limits"`
	}
	if err := s.admin(ctx, http.MethodGet, "/admin/routes/"+route, nil, &r); err != nil {
		return nil, err
	}
	return r.Limits, nil
}

// setRouteLimits replaces a route's limit list.
func (s *system) setRouteLimits(ctx context.Context, route string, limits []string) error {
	if limits == nil {
		limits = []string{}
	}
	return s.admin(ctx, http.MethodPatch, "/admin/routes/"+route, map[string]any{"limits": limits}, nil)
}

// limit reads one gateway limit; found is false when it does not exist.
func (s *system) limit(ctx context.Context, id string) (l adminLimit, found bool, err error) {
	err = s.admin(ctx, http.MethodGet, "/admin/limits/"+id, nil, &l)
	if errors.Is(err, errNotFound) {
		return adminLimit{}, false, nil
	}
	return l, err == nil, err
}

func (s *system) putLimit(ctx context.Context, l adminLimit) error {
	return s.admin(ctx, http.MethodPut, "/admin/limits/"+l.ID, l, nil)
}

func (s *system) deleteLimit(ctx context.Context, id string) error {
	err := s.admin(ctx, http.MethodDelete, "/admin/limits/"+id, nil, nil)
	if errors.Is(err, errNotFound) {
		return nil
	}
	return err
}

// adminEdit is one of the gateway's stored admin edits, as GET /admin/edits lists them.
type adminEdit struct {
	Kind    string          `json:"kind"`
	ID      string          `json:"id"`
	Value   json.RawMessage `json:"value"`
	Deleted bool            `json:"deleted"`
}

// edit returns the gateway's stored edit of one limit, route or service (kind limit, route or
// service); nil when the element is as the policy file has it.
func (s *system) edit(ctx context.Context, kind, id string) (*adminEdit, error) {
	var out struct {
		Edits []adminEdit `json:"edits"`
	}
	if err := s.admin(ctx, http.MethodGet, "/admin/edits", nil, &out); err != nil {
		return nil, err
	}
	for _, e := range out.Edits {
		if e.Kind == kind && e.ID == id {
			return &e, nil
		}
	}
	return nil, nil
}

// restoreEdit puts one element's stored edit back as prior was. With no prior edit the run's
// edit is dropped, so the element follows the policy file again: writing the file's value
// back would store a copy that hides the file's later changes, on every replica. Putting
// back what is already in force changes nothing (an edit already dropped is not an error),
// so a change journaled but never made is put back harmlessly.
func (s *system) restoreEdit(ctx context.Context, kind, id string, prior *adminEdit) error {
	switch {
	case prior == nil:
		err := s.admin(ctx, http.MethodDelete, "/admin/edits/"+kind+"/"+id, nil, nil)
		if errors.Is(err, errNotFound) {
			return nil
		}
		return err
	case prior.Deleted:
		return s.deleteLimit(ctx, id)
	default:
		return s.admin(ctx, http.MethodPut, "/admin/"+kind+"s/"+id, prior.Value, nil)
	}
}

// knobs reads the control knobs of service's first instance: what is in force before a
// run, to put back after it.
func (s *system) knobs(ctx context.Context, service string) (control.Knobs, error) {
	urls := s.t.Services[service]
	if len(urls) == 0 {
		return control.Knobs{}, fmt.Errorf("the target lists no instance of %s", service)
	}
	var k control.Knobs
	err := s.call(ctx, http.MethodGet, urls[0]+control.Path, nil, nil, &k)
	return k, err
}

// setKnobs puts k in force on every replica of service: over NATS when the target has it
// (replicas the playground cannot reach by URL get it too), else with a PUT to each
// instance's /control.
func (s *system) setKnobs(ctx context.Context, service string, k control.Knobs) error {
	if s.nc != nil {
		return control.Publish(ctx, s.nc, service, k)
	}
	urls := s.t.Services[service]
	if len(urls) == 0 {
		return fmt.Errorf("the target lists no instance of %s and no NATS", service)
	}
	var errs []error
	for _, u := range urls {
		errs = append(errs, s.call(ctx, http.MethodPut, u+control.Path, nil, k, nil))
	}
	return errors.Join(errs...)
}

// backendLoad is the backend's slots over all its instances, from their /metrics.
type backendLoad struct{ inFlight, queued, capacity int }

// The control hook's gauges as the Prometheus exporter names them.
const (
	metricInFlight = "boxoffice_control_in_flight"
	metricQueued   = "boxoffice_control_queued"
	metricCapacity = "boxoffice_control_max_concurrent"
)

// load scrapes every instance of service; an instance that does not answer counts nothing.
func (s *system) load(ctx context.Context, service string) (backendLoad, error) {
	var total backendLoad
	var errs []error
	for _, u := range s.t.Services[service] {
		samples, err := s.scrapeMetrics(ctx, u+"/metrics", metricInFlight, metricQueued, metricCapacity)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		l := sumLoad(samples, service)
		total.inFlight += l.inFlight
		total.queued += l.queued
		total.capacity += l.capacity
	}
	return total, errors.Join(errs...)
}

// parseLoad reads service's control gauges from a Prometheus text exposition.
func parseLoad(r io.Reader, service string) (backendLoad, error) {
	samples, err := readMetrics(r, metricInFlight, metricQueued, metricCapacity)
	return sumLoad(samples, service), err
}

// sumLoad sums service's control gauges. Series labelled with another service are skipped:
// in the all-in-one process, one registry may hold every component's.
func sumLoad(samples []metricSample, service string) backendLoad {
	var l backendLoad
	for _, s := range samples {
		if svc, ok := s.labels["service"]; ok && svc != service {
			continue
		}
		switch s.name {
		case metricInFlight:
			l.inFlight += int(s.value)
		case metricQueued:
			l.queued += int(s.value)
		case metricCapacity:
			l.capacity += int(s.value)
		}
	}
	return l
}

package upstream

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkForward measures one proxied GET over loopback: client → Forward → instance.
func BenchmarkForward(b *testing.B) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"id":"evt-bench","name":"Benchmark Night"}`)
	}))
	defer backend.Close()
	p, err := New([]ServiceConfig{{Name: "svc", Instances: []string{backend.URL}, Probe: ProbeConfig{Disabled: true}}}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.Forward(w, r, "svc", RouteOptions{Retry: true})
	}))
	defer front.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := client.Get(front.URL + "/v1/bench")
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				b.Errorf("status %d", res.StatusCode)
				return
			}
		}
	})
}

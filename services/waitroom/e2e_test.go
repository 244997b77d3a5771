package waitroom

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/natsconn"
	"boxoffice.dev/platform/testkit"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
	waitroomv1 "boxoffice.dev/proto/boxoffice/waitroom/v1"
	"boxoffice.dev/services/waitroom/pass"
)

// startWaitroom runs the whole waitroom process (testkit.RunProcess) against redisURL and
// waits until it is ready.
func startWaitroom(t *testing.T, redisURL, natsURL string) *testkit.Process {
	t.Helper()
	p := testkit.RunProcess(t, Run, map[string]string{
		"REDIS_URL": redisURL, "NATS_URL": natsURL, "CATALOG_GRPC_ADDR": serveCatalog(t), // the sales of these tests are the admin's
		"WAITROOM_SIGNING_KEY": pass.EncodePrivateKey(testKey), "WAITROOM_ADMIT_INTERVAL": "20ms",
	})
	testkit.Eventually(t, 10*time.Second, "waitroom /readyz answers 200", p.Ready)
	return p
}

// call makes one REST request as user ("" = anonymous) and decodes the answer into out.
func call(t *testing.T, method, url, user string, body any, out any) int {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if user != "" {
		req.Header.Set(identity.HeaderUser, user)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	if out != nil {
		if err := json.NewDecoder(res.Body).Decode(out); err != nil {
			t.Fatalf("%s %s: decode: %v", method, url, err)
		}
	}
	return res.StatusCode
}

func TestEndToEnd(t *testing.T) {
	rds := testkit.StartRedis(t)
	nats := testkit.StartNATS(t)
	wr := startWaitroom(t, rds.URL(), nats.ClientURL())
	queue := wr.HTTPURL + "/v1/events/evt-flash/queue"
	admin := wr.HTTPURL + "/v1/admin/events/evt-flash/queue"

	// Doors closed while the crowd arrives.
	var settings Settings
	if code := call(t, http.MethodPut, admin, "", map[string]int{"admit_per_second": 0}, &settings); code != http.StatusOK || settings.AdmitPerSecond != 0 {
		t.Fatalf("PUT queue settings = %d %+v, want 200 with rate 0", code, settings)
	}
	fans := []string{"acc-1", "acc-2", "acc-3", "acc-4", "acc-5"}
	for i, fan := range fans {
		var st Status
		if code := call(t, http.MethodPost, queue, fan, nil, &st); code != http.StatusOK || st.Position != int64(i+1) || st.State != Waiting {
			t.Fatalf("join %s = %d %+v, want 200 waiting at %d", fan, code, st, i+1)
		}
	}
	var again Status
	if call(t, http.MethodPost, queue, "acc-2", nil, &again); again.Position != 2 {
		t.Errorf("join acc-2 again = position %d, want 2", again.Position)
	}

	t.Run("bad requests", func(t *testing.T) {
		var p struct {
			Status int    `json:"status"`
			Field  string `json:"field"`
		}
		tests := []struct {
			name, method, url, user string
			body                    any
			want                    int
			field                   string
		}{
			{"anonymous join", http.MethodPost, queue, "", nil, 401, ""},
			{"not joined", http.MethodGet, wr.HTTPURL + "/v1/events/evt-001/queue/me", "acc-1", nil, 404, ""},
			{"no sale", http.MethodPost, wr.HTTPURL + "/v1/events/evt-001/queue", "acc-1", nil, 404, ""},
			{"bad event id", http.MethodPost, wr.HTTPURL + "/v1/events/evt%7Bx%7D/queue", "acc-1", nil, 400, "event_id"},
			{"negative rate", http.MethodPut, admin, "", map[string]int{"admit_per_second": -1}, 400, "admit_per_second"},
			{"rate missing", http.MethodPut, admin, "", map[string]int{}, 400, "admit_per_second"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				p.Field = ""
				if code := call(t, tt.method, tt.url, tt.user, tt.body, &p); code != tt.want || p.Field != tt.field {
					t.Errorf("%s %s = %d naming %q, want %d naming %q", tt.method, tt.url, code, p.Field, tt.want, tt.field)
				}
			})
		}
	})

	// A flash sale the catalog announces opens a queue of its own.
	js := testkit.JetStream(t, nats.ClientURL())
	if _, err := natsconn.EnsureStream(context.Background(), js, CatalogStream, []string{catalogEventSubjects}); err != nil {
		t.Fatal(err)
	}
	sale, _ := protojson.Marshal(&catalogv1.EventChange{Id: "evt-announced@v1", Event: &catalogv1.Event{
		Id: "evt-announced", FlashSale: true, StartsAt: timestamppb.New(time.Now().Add(24 * time.Hour))}})
	if _, err := js.Publish(context.Background(), "boxoffice.catalog.event.created", sale); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the catalog's flash sale joinable", func() bool {
		return call(t, http.MethodPost, wr.HTTPURL+"/v1/events/evt-announced/queue", "acc-1", nil, nil) == http.StatusOK
	})

	// The queue survives a restart: it lives in Redis, not in the process.
	if err := wr.Stop(); err != nil {
		t.Fatalf("Run = %v, want nil after cancel", err)
	}
	wr.Start(t)
	testkit.Eventually(t, 10*time.Second, "waitroom ready after a restart", wr.Ready)
	for i, fan := range fans {
		var st Status
		if code := call(t, http.MethodGet, queue+"/me", fan, nil, &st); code != http.StatusOK || st.Position != int64(i+1) {
			t.Errorf("after restart, %s = %d %+v, want position %d", fan, code, st, i+1)
		}
	}

	// gRPC speaks for the user in the metadata.
	client := waitroomv1.NewWaitroomClient(wr.Dial(t))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	asFan := identity.OutgoingContext(ctx, identity.Identity{User: "acc-6"})
	joined, err := client.Join(asFan, &waitroomv1.JoinRequest{EventId: "evt-flash"})
	if err != nil || joined.GetPosition() != 6 || joined.GetState() != waitroomv1.QueueState_QUEUE_STATE_WAITING || joined.GetEstimatedWaitS() != -1 {
		t.Fatalf("gRPC Join = %v, %v, want waiting at 6, no estimate while paused", joined, err)
	}
	if _, err := client.Join(ctx, &waitroomv1.JoinRequest{EventId: "evt-flash"}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("gRPC Join without a user = %v, want Unauthenticated", err)
	}

	// Doors open: everyone is admitted within a few ticks and gets a pass inventory accepts.
	admin = wr.HTTPURL + "/v1/admin/events/evt-flash/queue"
	call(t, http.MethodPut, admin, "", map[string]int{"admit_per_second": 100}, nil)
	testkit.Eventually(t, 5*time.Second, "acc-6 admitted", func() bool {
		st, err := client.Status(asFan, &waitroomv1.StatusRequest{EventId: "evt-flash"})
		return err == nil && st.GetState() == waitroomv1.QueueState_QUEUE_STATE_ADMITTED
	})
	st, err := client.Status(asFan, &waitroomv1.StatusRequest{EventId: "evt-flash"})
	if err != nil {
		t.Fatal(err)
	}
	pub := testKey.Public().(ed25519.PublicKey)
	if _, err := pass.Check(pub, st.GetPass(), time.Now(), "evt-flash", "acc-6"); err != nil {
		t.Errorf("gRPC pass: %v", err)
	}
	var rest Status
	if code := call(t, http.MethodGet, queue+"/me", "acc-1", nil, &rest); code != http.StatusOK || rest.State != Admitted {
		t.Fatalf("acc-1 = %d %+v, want admitted", code, rest)
	}
	if _, err := pass.Check(pub, rest.Pass, time.Now(), "evt-flash", "acc-1"); err != nil {
		t.Errorf("REST pass: %v", err)
	}
	if call(t, http.MethodGet, admin, "", nil, &settings); settings.Admitted != 6 || settings.Waiting != 0 {
		t.Errorf("queue settings = %+v, want 6 admitted, 0 waiting", settings)
	}
	res, err := http.Get(wr.HTTPURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if want := `boxoffice_waitroom_admissions_total{event="evt-flash"} 6`; !strings.Contains(string(metrics), want) {
		t.Errorf("/metrics has no %s", want)
	}
}

func TestRunRejectsBadConfiguration(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"bad signing key", map[string]string{"WAITROOM_SIGNING_KEY": "c2VjcmV0"}, "WAITROOM_SIGNING_KEY"},
		{"zero rate", map[string]string{"WAITROOM_ADMIT_PER_SECOND": "0"}, "WAITROOM_ADMIT_PER_SECOND"},
		{"bad pass TTL", map[string]string{"WAITROOM_PASS_TTL": "soon"}, "WAITROOM_PASS_TTL"},
		{"catalog address without a port", map[string]string{"CATALOG_GRPC_ADDR": "catalog"}, "CATALOG_GRPC_ADDR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Run(context.Background(), nil, func(k string) string { return tt.env[k] }, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run = %v, want a configuration error naming %s", err, tt.want)
			}
			if strings.Contains(fmt.Sprint(err), "c2VjcmV0") {
				t.Errorf("Run = %v, which shows the secret key", err)
			}
		})
	}
}

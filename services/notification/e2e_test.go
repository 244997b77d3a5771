package notification

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	commonv1 "boxoffice.dev/proto/boxoffice/common/v1"
	notificationv1 "boxoffice.dev/proto/boxoffice/notification/v1"

	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/natsconn"
	"boxoffice.dev/platform/testkit"
)

func TestEndToEnd(t *testing.T) {
	srv := testkit.StartNATS(t)
	proc := testkit.RunProcess(t, Run, map[string]string{"NATS_URL": srv.ClientURL()})
	base, ctx := proc.HTTPURL, context.Background()

	// The producer's stream appears after notification started, as when order starts later.
	js := testkit.JetStream(t, srv.ClientURL())
	if _, err := natsconn.EnsureStream(ctx, js, "ORDER", []string{"boxoffice.order.>"}); err != nil {
		t.Fatal(err)
	}
	publish(t, js, "boxoffice.order.order.confirmed", "ord_9.confirmed", orderEvent("ord_9.confirmed", "confirmed", "acc_9"))

	inboxOf := func(user string) (int, Page) {
		req, _ := http.NewRequest(http.MethodGet, base+"/v1/notifications?limit=10", nil)
		if user != "" {
			req.Header.Set(identity.HeaderUser, user)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var page Page
		_ = json.NewDecoder(res.Body).Decode(&page)
		return res.StatusCode, page
	}
	testkit.Eventually(t, 15*time.Second, "the confirmed order reaches acc_9's inbox over REST", func() bool {
		code, page := inboxOf("acc_9")
		return code == http.StatusOK && len(page.Messages) == 1 && page.Messages[0].Kind == OrderConfirmed
	})
	if code, _ := inboxOf(""); code != http.StatusUnauthorized {
		t.Errorf("GET /v1/notifications without a user = %d, want 401", code)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/notifications?limit=abc", nil)
	req.Header.Set(identity.HeaderUser, "acc_9")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ Field string }
	_ = json.NewDecoder(res.Body).Decode(&p)
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest || res.Header.Get("Content-Type") != "application/problem+json" || p.Field != "limit" {
		t.Errorf("GET ?limit=abc = %d %s field %q, want 400 problem+json naming limit", res.StatusCode, res.Header.Get("Content-Type"), p.Field)
	}

	client := notificationv1.NewNotificationClient(proc.Dial(t))
	callCtx, callCancel := context.WithTimeout(identity.OutgoingContext(ctx, identity.Identity{User: "acc_9"}), 5*time.Second)
	defer callCancel()
	list, err := client.ListNotifications(callCtx, &notificationv1.ListNotificationsRequest{Page: &commonv1.PageRequest{PageSize: 5}})
	if err != nil || len(list.GetNotifications()) != 1 || !strings.Contains(list.GetNotifications()[0].GetSubject(), "ord") {
		t.Errorf("ListNotifications = %v, %v; want acc_9's one message", list, err)
	}
	anon, anonCancel := context.WithTimeout(ctx, 5*time.Second)
	defer anonCancel()
	if _, err := client.ListNotifications(anon, &notificationv1.ListNotificationsRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("ListNotifications without a user = %v, want Unauthenticated", err)
	}
}

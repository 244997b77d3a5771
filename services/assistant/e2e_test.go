package assistant_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"boxoffice.dev/platform/testkit"
	assistantv1 "boxoffice.dev/proto/boxoffice/assistant/v1"
	"boxoffice.dev/services/assistant"
	"boxoffice.dev/services/catalog"
)

// TestEndToEnd runs the catalog with its demo data and the assistant in-process, and asks
// questions over REST and gRPC. The clock is the real one, so the checks hold on any day:
// every listed event matches what the assistant says it understood.
func TestEndToEnd(t *testing.T) {
	cat := testkit.RunProcess(t, catalog.Run, map[string]string{"SEED_DEMO": "true"})
	asst := testkit.RunProcess(t, assistant.Run, map[string]string{"CATALOG_GRPC_ADDR": cat.GRPCAddr})
	testkit.Eventually(t, 10*time.Second, "catalog and assistant ready", func() bool { return cat.Ready() && asst.Ready() })
	url := asst.HTTPURL + "/v1/assistant/ask"

	t.Run("listing and counting", func(t *testing.T) {
		// São Paulo's demo acts under 200 reais: six acts, two nights each.
		ans, tokens := ask(t, url, "What's on in São Paulo under 200?")
		if len(ans.Events) != assistant.MaxListed || !strings.Contains(ans.Answer, "I found 12 events in São Paulo under 200:") ||
			!strings.Contains(ans.Answer, "and 7 more") {
			t.Errorf("answer = %q with %d events, want 12 found, %d listed, 7 more", ans.Answer, len(ans.Events), assistant.MaxListed)
		}
		for i, m := range ans.Events {
			if m.City != "São Paulo" || m.MinPrice.Minor > 20000 || m.VenueName == "" || i > 0 && m.StartsAt.Before(ans.Events[i-1].StartsAt) {
				t.Errorf("event %d = %+v, want São Paulo, at most BRL 200, a venue name, soonest first", i, m)
			}
		}
		if tokens != ans.Tokens || tokens != assistant.Tokens(ans.Question, ans.Answer) {
			t.Errorf("X-Boxoffice-Tokens = %d, body %d, want both Tokens(question, answer) = %d", tokens, ans.Tokens, assistant.Tokens(ans.Question, ans.Answer))
		}
		none, noneTokens := ask(t, url, "opera in Porto")
		if len(none.Events) != 0 || noneTokens >= tokens {
			t.Errorf("a question with no match cost %d tokens, one listing %d events %d; want the longer answer to cost more", noneTokens, len(ans.Events), tokens)
		}
	})

	t.Run("dates are kept", func(t *testing.T) {
		listed := 0
		// The demo runs eight weeks from tomorrow, so next month always has events.
		for _, q := range []string{"what's on next month", "jazz in Berlin next week", "anything in Lisbon this weekend?", "fado in lisboa next month", "comedy tomorrow"} {
			ans, _ := ask(t, url, q)
			listed += len(ans.Events)
			u := ans.Understood
			if u.From == nil || u.Period == "" {
				t.Errorf("%q understood %+v, want a period", q, u)
				continue
			}
			for _, m := range ans.Events {
				if m.StartsAt.Before(*u.From) || u.To != nil && !m.StartsAt.Before(*u.To) || u.City != "" && m.City != u.City {
					t.Errorf("%q listed %s at %v in %s, outside what it understood %+v", q, m.ID, m.StartsAt, m.City, u)
				}
			}
		}
		if listed == 0 {
			t.Error("no question listed any event, want some to check")
		}
	})

	t.Run("bad questions name the field", func(t *testing.T) {
		for _, body := range []string{`{}`, `{"question":"   "}`, `{"question":"` + strings.Repeat("a", 501) + `"}`} {
			res, err := http.Post(url, "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			var p struct{ Field string }
			_ = json.NewDecoder(res.Body).Decode(&p)
			res.Body.Close()
			if res.StatusCode != http.StatusBadRequest || p.Field != "question" || res.Header.Get(assistant.TokensHeader) != "" {
				t.Errorf("POST %.30s = %d field %q tokens %q, want 400 naming question, no tokens", body, res.StatusCode, p.Field, res.Header.Get(assistant.TokensHeader))
			}
		}
	})

	t.Run("a price beyond any ticket is no cap", func(t *testing.T) {
		capped, _ := ask(t, url, "jazz in Lisboa under 100000000000000000")
		plain, _ := ask(t, url, "jazz in Lisboa")
		if capped.Understood.MaxPrice != 0 || len(capped.Events) == 0 || len(capped.Events) != len(plain.Events) {
			t.Errorf("ask(jazz in Lisboa under 10^17) = max price %d, %d events; want no cap and the %d events without a price",
				capped.Understood.MaxPrice, len(capped.Events), len(plain.Events))
		}
	})

	t.Run("grpc", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var header metadata.MD
		res, err := assistantv1.NewAssistantClient(asst.Dial(t)).Ask(ctx, &assistantv1.AskRequest{Question: "classical in berlin"}, grpc.Header(&header))
		if err != nil {
			t.Fatalf("Ask: %v", err)
		}
		got := header.Get("x-boxoffice-tokens")
		if len(res.GetEvents()) == 0 || res.GetUnderstood().GetCity() != "Berlin" || len(got) != 1 || got[0] != strconv.FormatInt(res.GetTokens(), 10) {
			t.Errorf("Ask(classical in berlin) = %v, header tokens %v; want Berlin events and the tokens in the header", res, got)
		}
	})
}

func ask(t *testing.T, url, question string) (assistant.Answer, int) {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"question": question})
	res, err := http.Post(url, "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("ask %q: %v", question, err)
	}
	defer res.Body.Close()
	var ans assistant.Answer
	if res.StatusCode != http.StatusOK || json.NewDecoder(res.Body).Decode(&ans) != nil {
		t.Fatalf("ask %q = %d", question, res.StatusCode)
	}
	tokens, err := strconv.Atoi(res.Header.Get(assistant.TokensHeader))
	if err != nil {
		t.Fatalf("ask %q: %s = %q", question, assistant.TokensHeader, res.Header.Get(assistant.TokensHeader))
	}
	return ans, tokens
}

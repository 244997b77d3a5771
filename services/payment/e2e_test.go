package payment

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	commonv1 "boxoffice.dev/proto/boxoffice/common/v1"
	paymentv1 "boxoffice.dev/proto/boxoffice/payment/v1"

	"boxoffice.dev/platform/testkit"
)

func TestEndToEnd(t *testing.T) {
	p := testkit.RunProcess(t, Run, nil)
	base, client := p.HTTPURL, paymentv1.NewPaymentClient(p.Dial(t))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	req := &paymentv1.ChargeRequest{IdempotencyKey: "order:ord_1", OrderId: "ord_1", Account: "acc_1",
		Amount: &commonv1.Money{Currency: "BRL", Minor: 12550}}
	first, err := client.Charge(ctx, req)
	if err != nil || first.GetStatus() != paymentv1.ChargeStatus_CHARGE_STATUS_SUCCEEDED {
		t.Fatalf("Charge = %v, %v; want succeeded", first, err)
	}
	again, err := client.Charge(ctx, req)
	if err != nil || again.GetChargeId() != first.GetChargeId() {
		t.Fatalf("Charge again = %v, %v; want charge %s", again, err, first.GetChargeId())
	}

	t.Run("bad input names the field", func(t *testing.T) {
		bad := &paymentv1.ChargeRequest{IdempotencyKey: "k", OrderId: "o", Account: "a", Amount: &commonv1.Money{Currency: "BRL"}}
		_, err := client.Charge(ctx, bad)
		if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "amount.minor") {
			t.Errorf("Charge(zero amount) = %v, want InvalidArgument naming amount.minor", err)
		}
	})

	t.Run("declined by rule", func(t *testing.T) {
		res, err := client.Charge(ctx, &paymentv1.ChargeRequest{IdempotencyKey: "order:ord_2", OrderId: "ord_2", Account: "acc_1",
			Amount: &commonv1.Money{Currency: "BRL", Minor: 9913}})
		if err != nil || res.GetStatus() != paymentv1.ChargeStatus_CHARGE_STATUS_DECLINED {
			t.Errorf("Charge(9913) = %v, %v; want declined", res, err)
		}
	})

	t.Run("refund and get by key", func(t *testing.T) {
		if _, err := client.Refund(ctx, &paymentv1.RefundRequest{ChargeId: first.GetChargeId()}); err != nil {
			t.Fatal(err)
		}
		got, err := client.GetCharge(ctx, &paymentv1.GetChargeRequest{IdempotencyKey: "order:ord_1"})
		if err != nil || got.GetCharge().GetStatus() != paymentv1.ChargeStatus_CHARGE_STATUS_REFUNDED {
			t.Errorf("GetCharge = %v, %v; want refunded", got, err)
		}
		_, err = client.GetCharge(ctx, &paymentv1.GetChargeRequest{IdempotencyKey: "order:none"})
		if status.Code(err) != codes.NotFound {
			t.Errorf("GetCharge(unknown key) = %v, want NotFound", err)
		}
	})

	t.Run("admin list over REST", func(t *testing.T) {
		var page Page
		if code := getJSON(t, base+"/v1/admin/charges?order_id=ord_1", &page); code != http.StatusOK || len(page.Charges) != 1 {
			t.Fatalf("GET charges?order_id=ord_1 = %d with %d charges, want 200 with 1", code, len(page.Charges))
		}
		var p struct{ Field string }
		res, err := http.Get(base + "/v1/admin/charges?limit=0")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		_ = json.NewDecoder(res.Body).Decode(&p)
		if res.StatusCode != http.StatusBadRequest || res.Header.Get("Content-Type") != "application/problem+json" || p.Field != "limit" {
			t.Errorf("GET charges?limit=0 = %d %s field %q, want 400 problem+json naming limit", res.StatusCode, res.Header.Get("Content-Type"), p.Field)
		}
	})

	t.Run("metrics count charges by status", func(t *testing.T) {
		res, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		for _, want := range []string{`payment_charges_total{`, `status="succeeded"`, `status="declined"`} {
			if !strings.Contains(string(body), want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})

	t.Run("control hook outage", func(t *testing.T) {
		put(t, base+"/control", `{"outage":true}`)
		_, err := client.GetCharge(ctx, &paymentv1.GetChargeRequest{IdempotencyKey: "order:ord_1"})
		put(t, base+"/control", `{}`)
		if status.Code(err) != codes.Unavailable {
			t.Errorf("GetCharge during an outage = %v, want Unavailable", err)
		}
	})
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: decode: %v", url, err)
	}
	return res.StatusCode
}

func put(t *testing.T, url, body string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("PUT %s %s = %d, want 200", url, body, res.StatusCode)
	}
}

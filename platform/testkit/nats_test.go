package testkit

import (
	"context"
	"testing"
	"time"
)

func TestStartNATSHasJetStream(t *testing.T) {
	js := JetStream(t, StartNATS(t).ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := js.AccountInfo(ctx); err != nil {
		t.Errorf("JetStream AccountInfo: %v, want JetStream enabled", err)
	}
}

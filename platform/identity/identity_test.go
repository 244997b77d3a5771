package identity

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"google.golang.org/grpc/metadata"
)

func TestSetReplacesForgedHeaders(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set(HeaderUser, "forged-admin")
	r.Header.Set(HeaderPlan, "internal")
	Identity{User: "u-42"}.Set(r.Header)
	got := FromRequest(r)
	if got != (Identity{User: "u-42"}) {
		t.Fatalf("FromRequest after Set = %+v, want only the verified user", got)
	}
}

func TestGRPCMetadataRoundTrip(t *testing.T) {
	id := Identity{User: "u-7", Tenant: "acme", Plan: "partner"}
	out := OutgoingContext(context.Background(), id)
	md, _ := metadata.FromOutgoingContext(out)
	in := metadata.NewIncomingContext(context.Background(), md)
	if got := FromIncomingContext(in); got != id {
		t.Fatalf("FromIncomingContext = %+v, want %+v", got, id)
	}
	if got := FromIncomingContext(context.Background()); !got.Anonymous() {
		t.Fatalf("FromIncomingContext(no metadata) = %+v, want anonymous", got)
	}
}

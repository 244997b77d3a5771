package main

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"boxoffice.dev/gateway/upstream"
	"boxoffice.dev/platform/httpserver"
	"boxoffice.dev/services/auth/token"
)

// benchPath is the one route every target serves.
const benchPath = "/v1/bench"

// benchBody is what the upstream answers: the size of a small event card.
var benchBody = []byte(`{"id":"evt-bench","name":"Benchmark Night","venue":"Loopback Hall","startsAt":"2026-06-01T20:00:00Z","priceFrom":4200}`)

// The route and request of the gateway-graphql target: a small query of an event and its
// ticket classes, as the mobile app's event page sends, POSTed as gqlgen's transport reads
// it. The upstream answers it with benchBody, as it answers the other targets: the row
// measures what the gateway adds, not a GraphQL server.
const graphqlPath = "/graphql/bench"

var graphqlBody = []byte(`{"query":"query Event($id: ID!) { event(id: $id) { id title ticketClasses { id name price { currency minor } } } }","variables":{"id":"evt-bench"}}`)

// The routes of the flood target (see flood.go): a public read that the flood aims at, and a
// login that answers 200 to benchPassword and 401 to any other.
const (
	eventsPath    = "/v1/events"
	loginPath     = "/v1/auth/login"
	benchPassword = "right"
)

// serveUpstream is the "upstream" role: the service every target proxies to. It answers
// GET /v1/bench at once, passes its readiness probe, and publishes the JWKS of the bench's
// signing key for the gateway's JWT check. It answers POST /graphql/bench with the same
// body, without reading the query. For the flood target it also answers GET
// /v1/events as it does /v1/bench, and POST /v1/auth/login at once: 200 for the password
// benchPassword, 401 for any other.
func serveUpstream(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("upstream", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	seed := fs.String("jwk-seed", "", "hex Ed25519 seed of the key whose JWKS to publish")
	if err := fs.Parse(args); err != nil {
		return err
	}
	h, err := upstreamHandler(*seed)
	if err != nil {
		return err
	}
	return listenAndServe(ctx, *addr, h)
}

// upstreamHandler is what the upstream role serves (see serveUpstream), publishing the JWKS
// of the key with the given hex seed.
func upstreamHandler(seedHex string) (http.Handler, error) {
	jwks, err := jwksFor(seedHex)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	card := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(benchBody)
	}
	mux.HandleFunc("GET "+benchPath, card)
	mux.HandleFunc("POST "+graphqlPath, card)
	mux.HandleFunc("GET "+eventsPath, card)
	mux.HandleFunc("POST "+loginPath, func(w http.ResponseWriter, r *http.Request) {
		var creds struct {
			Password string `json:"password"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&creds); err != nil || creds.Password != benchPassword {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"signedIn":true}`)
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ready") })
	mux.HandleFunc("GET /.well-known/jwks.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(jwks)
	})
	return mux, nil
}

// jwksFor is the JWKS document of the key with the given hex seed.
func jwksFor(seedHex string) ([]byte, error) {
	key, err := keyFromSeed(seedHex)
	if err != nil {
		return nil, err
	}
	doc := token.JWKS{Keys: []token.JWK{token.PublicJWK(benchKid, key.Public().(ed25519.PublicKey))}}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode jwks: %w", err)
	}
	return b, nil
}

func keyFromSeed(seedHex string) (ed25519.PrivateKey, error) {
	seed, err := hex.DecodeString(seedHex)
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("jwk seed: want %d hex bytes", ed25519.SeedSize)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// servePools is the "pools" role: the gateway's upstream layer alone (probes, P2C,
// timeouts, retry budget) in front of the upstream, with no policy at all. It tells what
// the proxy costs apart from authentication and limits.
func servePools(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("pools", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	target := fs.String("upstream", "", "upstream base URL")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pools, err := upstream.New([]upstream.ServiceConfig{{Name: "bench", Instances: []string{*target}}}, upstream.Options{})
	if err != nil {
		return err
	}
	go pools.Run(ctx)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pools.Forward(w, r, "bench", upstream.RouteOptions{Retry: r.Method == http.MethodGet})
	})
	return listenAndServe(ctx, *addr, h)
}

// listenAndServe serves h on addr until ctx is done.
func listenAndServe(ctx context.Context, addr string, h http.Handler) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	return httpserver.Serve(ctx, httpserver.New(h), l, 2*time.Second)
}

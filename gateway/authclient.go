package gateway

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"boxoffice.dev/gateway/authn"
	"boxoffice.dev/platform/server"
	authv1 "boxoffice.dev/proto/boxoffice/auth/v1"
)

// authenticator verifies JWTs against the auth service's JWKS (refreshed in the background)
// and resolves API keys over its gRPC API. The connection is made lazily: the gateway may
// start before the auth service, as it does in `boxoffice up`.
func authenticator(s *server.Server, cfg Config) (*authn.Authenticator, error) {
	jwks := authn.NewJWKS(cfg.AuthURL+"/.well-known/jwks.json", authn.JWKSOptions{
		Client: &http.Client{Timeout: 2 * time.Second, Transport: s.Telemetry.HTTPTransport(nil)}, Log: s.Log})
	s.Go("jwks", func(ctx context.Context) error { jwks.Run(ctx); return nil })
	conn, err := grpc.NewClient(cfg.AuthGRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()), s.Telemetry.GRPCDialOption())
	if err != nil {
		return nil, fmt.Errorf("auth grpc %s: %w", cfg.AuthGRPCAddr, err)
	}
	s.OnClose(conn.Close)
	return &authn.Authenticator{
		Tokens: authn.NewVerifier(jwks, cfg.Issuer, cfg.Audience, cfg.TokenLeeway),
		Keys:   authn.NewAPIKeys(&authn.GRPCResolver{Client: authv1.NewAuthClient(conn)}, authn.APIKeysOptions{}),
	}, nil
}

package auth

import (
	"context"

	"google.golang.org/protobuf/types/known/timestamppb"

	"boxoffice.dev/platform/problem"
	authv1 "boxoffice.dev/proto/boxoffice/auth/v1"
)

// grpcServer serves boxoffice.auth.v1.Auth over the Service.
type grpcServer struct {
	authv1.UnimplementedAuthServer
	svc *Service
}

var _ authv1.AuthServer = (*grpcServer)(nil)

// ResolveAPIKey returns the tenant and plan of an API key; NotFound for an unknown key.
func (g *grpcServer) ResolveAPIKey(ctx context.Context, req *authv1.ResolveAPIKeyRequest) (*authv1.ResolveAPIKeyResponse, error) {
	t, err := g.svc.ResolveAPIKey(ctx, req.GetApiKey())
	if err != nil {
		return nil, problem.GRPC(err)
	}
	return &authv1.ResolveAPIKeyResponse{Tenant: t.ID, Plan: string(t.Plan), TenantName: t.Name}, nil
}

// GetJWKS returns the published public keys, as /.well-known/jwks.json does.
func (g *grpcServer) GetJWKS(context.Context, *authv1.GetJWKSRequest) (*authv1.GetJWKSResponse, error) {
	set := g.svc.JWKS()
	out := &authv1.GetJWKSResponse{MaxAgeSeconds: int32(g.svc.JWKSMaxAge().Seconds())}
	for _, k := range set.Keys {
		out.Keys = append(out.Keys, &authv1.JWK{Kty: k.KeyType, Crv: k.Curve, X: k.X, Kid: k.KeyID, Alg: k.Algorithm, Use: k.Use})
	}
	return out, nil
}

// GetUser returns one account.
func (g *grpcServer) GetUser(ctx context.Context, req *authv1.GetUserRequest) (*authv1.User, error) {
	u, err := g.svc.User(ctx, req.GetId())
	if err != nil {
		return nil, problem.GRPC(err)
	}
	return &authv1.User{Id: u.ID, Email: u.Email, Name: u.Name, CreatedAt: timestamppb.New(u.CreatedAt)}, nil
}

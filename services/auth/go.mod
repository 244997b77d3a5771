module boxoffice.dev/services/auth

go 1.26.0

require (
	github.com/golang-jwt/jwt/v5 v5.3.1
	golang.org/x/crypto v0.58.0
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
)

require (
	golang.org/x/net v0.61.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260928230214-8a89bd6388cc // indirect
)

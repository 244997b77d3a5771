module boxoffice.dev/services/auth

go 1.26.0

require (
	github.com/golang-jwt/jwt/v5 v5.3.1 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/crypto v0.58.0 // indirect
)

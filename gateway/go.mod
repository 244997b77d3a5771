module boxoffice.dev/gateway

go 1.26.0

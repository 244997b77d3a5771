module boxoffice.dev/cmd/healthcheck

go 1.26.0

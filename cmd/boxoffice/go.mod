module boxoffice.dev/cmd/boxoffice

go 1.26.0

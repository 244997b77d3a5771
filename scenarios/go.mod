module boxoffice.dev/scenarios

go 1.26.0

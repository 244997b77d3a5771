module boxoffice.dev/deploy

go 1.26.0

module boxoffice.dev/docs

go 1.26.0

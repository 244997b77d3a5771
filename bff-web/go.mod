module boxoffice.dev/bff-web

go 1.26.0

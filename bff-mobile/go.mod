module boxoffice.dev/bff-mobile

go 1.26.0

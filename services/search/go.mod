module boxoffice.dev/services/search

go 1.26.0

module boxoffice.dev/services/catalog

go 1.26.0

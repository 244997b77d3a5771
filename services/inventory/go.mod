module boxoffice.dev/services/inventory

go 1.26.0

module boxoffice.dev/services/waitroom

go 1.26.0

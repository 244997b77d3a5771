module boxoffice.dev/services/notification

go 1.26.0

module boxoffice.dev/proto

go 1.26.0

module boxoffice.dev/services/assistant

go 1.26.0

module boxoffice.dev/services/payment

go 1.26.0

module boxoffice.dev/services/order

go 1.26.0

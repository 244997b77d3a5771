module boxoffice.dev/playground

go 1.26.0

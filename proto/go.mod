module boxoffice.dev/proto

go 1.26.0

tool (
	google.golang.org/grpc/cmd/protoc-gen-go-grpc
	google.golang.org/protobuf/cmd/protoc-gen-go
)

require google.golang.org/protobuf v1.36.12

require google.golang.org/grpc/cmd/protoc-gen-go-grpc v1.5.1 // indirect

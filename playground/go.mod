module boxoffice.dev/playground

go 1.26.0

require (
	github.com/HdrHistogram/hdrhistogram-go v1.1.2
	go.yaml.in/yaml/v3 v3.0.6
)

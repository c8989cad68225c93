module github.com/iotrace/iotrace

go 1.26.8

require (
	github.com/bmatcuk/doublestar/v4 v4.10.4
	github.com/cilium/ebpf v0.22.0
	github.com/spf13/cobra v1.10.2
	github.com/spf13/pflag v1.0.10
	go.starlark.net v0.0.0-20260908191801-89a6a09411d5
	golang.org/x/sys v0.49.0
	golang.org/x/term v0.41.0
)

require github.com/inconshreveable/mousetrap v1.1.0 // indirect

package cli

import (
	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/backend/ebpf"
	"github.com/iotrace/iotrace/backend/etw/live"
	"github.com/iotrace/iotrace/backend/ptrace"
)

// liveBackends returns every live tracing backend built into iotrace, in
// the order `iotrace backends` lists them. Backend owners add their
// constructor here; a backend that cannot run on this OS still belongs in
// the list (its Available says why not).
func liveBackends() []backend.Backend {
	return []backend.Backend{
		ebpf.New(ebpf.Config{}),
		live.New(live.Config{}),
		ptrace.New(ptrace.Config{}),
	}
}

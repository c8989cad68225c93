package ebpf

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/cilium/ebpf"
)

// programs returns every program of the loaded object by its name in the
// object (the ebpf tag of its field), attached or not: one never attached
// never runs and skips nothing.
func (p *probes) programs() map[string]*ebpf.Program {
	out := map[string]*ebpf.Program{}
	v := reflect.ValueOf(&p.objs.iotracePrograms).Elem()
	for i := 0; i < v.NumField(); i++ {
		if prog, ok := v.Field(i).Interface().(*ebpf.Program); ok && prog != nil {
			out[v.Type().Field(i).Tag.Get("ebpf")] = prog
		}
	}
	return out
}

// skipped reads, for every program, the runs the kernel skipped because
// the program was already running on that CPU (its recursion_misses,
// from BPF_OBJ_GET_INFO_BY_FD).
func (p *probes) skipped() (map[string]uint64, error) {
	out := map[string]uint64{}
	var errs []error
	for name, prog := range p.programs() {
		st, err := prog.Stats()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		out[name] = st.RecursionMisses
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("ebpf: read the programs' skipped runs: %w", errors.Join(errs...))
	}
	return out, nil
}

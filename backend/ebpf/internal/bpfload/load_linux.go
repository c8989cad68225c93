package bpfload

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// LoadAndAssign loads spec into objs (a struct of ebpf-tagged fields) as
// spec.LoadAndAssign(objs, opts) does, but its programs side by side: the
// maps (and the global data) first, then each program on its own, one
// per CPU at a time, the largest first, all sharing those maps.
// opts.MapReplacements and opts.Cache (the kernel's BTF, best parsed once
// for every collection) are used as LoadAndAssign uses them.
func LoadAndAssign(spec *ebpf.CollectionSpec, objs any, opts ebpf.CollectionOptions) error {
	kt := opts.Cache
	if kt == nil {
		kt = btf.NewCache()
	}
	mapsOnly := spec.Copy()
	mapsOnly.Programs = nil
	all, err := ebpf.NewCollectionWithOptions(mapsOnly, ebpf.CollectionOptions{MapReplacements: opts.MapReplacements, Cache: kt})
	if err != nil {
		return err
	}
	defer all.Close() // what objs did not take
	all.Programs = map[string]*ebpf.Program{}

	names := make([]string, 0, len(spec.Programs))
	for name := range spec.Programs {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		return len(spec.Programs[names[i]].Instructions) > len(spec.Programs[names[j]].Instructions)
	})
	var (
		mu   sync.Mutex
		errs []error
		next = make(chan string, len(names))
		wg   sync.WaitGroup
	)
	for _, n := range names {
		next <- n
	}
	close(next)
	workers := min(runtime.NumCPU(), len(names))
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range next {
				prog, err := loadOne(spec, name, all.Maps, kt)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					all.Programs[name] = prog
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, p := range all.Programs {
			p.Close()
		}
		return err
	}
	return all.Assign(objs)
}

// loadOne loads program name of spec with maps in place of spec's maps.
func loadOne(spec *ebpf.CollectionSpec, name string, maps map[string]*ebpf.Map, kt *btf.Cache) (*ebpf.Program, error) {
	one := &ebpf.CollectionSpec{
		Maps:      map[string]*ebpf.MapSpec{},
		Programs:  map[string]*ebpf.ProgramSpec{name: spec.Programs[name]},
		Types:     spec.Types,
		ByteOrder: spec.ByteOrder,
	}
	// Only the maps the program refers to: each is cloned (a new fd).
	for _, ins := range spec.Programs[name].Instructions {
		if ref := ins.Reference(); ins.IsLoadFromMap() && ref != "" {
			if ms, ok := spec.Maps[ref]; ok {
				one.Maps[ref] = ms
			}
		}
	}
	repl := make(map[string]*ebpf.Map, len(one.Maps))
	for ref := range one.Maps {
		m, ok := maps[ref]
		if !ok {
			return nil, fmt.Errorf("program %s: map %s was not created", name, ref)
		}
		repl[ref] = m
	}
	c, err := ebpf.NewCollectionWithOptions(one, ebpf.CollectionOptions{MapReplacements: repl, Cache: kt})
	if err != nil {
		return nil, err
	}
	prog := c.Programs[name]
	delete(c.Programs, name)
	c.Close() // the clones of the maps: the program holds its own references
	if prog == nil {
		return nil, fmt.Errorf("program %s not loaded", name)
	}
	return prog, nil
}

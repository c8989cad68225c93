package bpfload

import (
	"errors"
	"fmt"
	"reflect"
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
// for every collection) are used as LoadAndAssign uses them. Programs
// named in skip are not loaded (the options leave them unused): their
// fields in objs stay nil.
func LoadAndAssign(spec *ebpf.CollectionSpec, objs any, opts ebpf.CollectionOptions, skip map[string]bool) error {
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
		if !skip[name] {
			names = append(names, name)
		}
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
	return assign(objs, all, skip)
}

// assign sets objs' ebpf-tagged fields (in embedded structs too) from c,
// taking each object out of c, as Collection.Assign does; a program in
// skip is left nil.
func assign(objs any, c *ebpf.Collection, skip map[string]bool) error {
	v := reflect.ValueOf(objs)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("bpfload: assign to %T, want a pointer to a struct", objs)
	}
	var fields func(s reflect.Value) error
	fields = func(s reflect.Value) error {
		for i := 0; i < s.NumField(); i++ {
			f, sf := s.Field(i), s.Type().Field(i)
			if sf.Anonymous && f.Kind() == reflect.Struct {
				if err := fields(f); err != nil {
					return err
				}
				continue
			}
			name := sf.Tag.Get("ebpf")
			if name == "" {
				continue
			}
			var obj any
			switch f.Interface().(type) {
			case *ebpf.Program:
				if skip[name] {
					continue
				}
				if p := c.Programs[name]; p != nil {
					obj = p
					delete(c.Programs, name)
				}
			case *ebpf.Map:
				if m := c.Maps[name]; m != nil {
					obj = m
					delete(c.Maps, name)
				}
			case *ebpf.Variable:
				if vr := c.Variables[name]; vr != nil {
					obj = vr
					delete(c.Variables, name)
				}
			default:
				return fmt.Errorf("bpfload: field %s has type %s", sf.Name, sf.Type)
			}
			if obj == nil {
				return fmt.Errorf("bpfload: no %s %q in the collection", sf.Type, name)
			}
			f.Set(reflect.ValueOf(obj))
		}
		return nil
	}
	return fields(v.Elem())
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

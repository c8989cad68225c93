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

// Pending is a collection whose maps exist and whose programs are still
// to be loaded: another collection that shares its maps can be loaded
// meanwhile, side by side (iotrace's block programs use the system-call
// programs' maps).
type Pending struct {
	spec *ebpf.CollectionSpec
	all  *ebpf.Collection // the maps objs did not take
	kt   *btf.Cache
	skip map[string]bool
}

// CreateMaps creates spec's maps (and global data) and assigns them and
// the variables to objs' fields (a struct of ebpf-tagged fields, as
// spec.LoadAndAssign's); [Pending.Programs] loads the programs (not those
// in skip) side by side, one per CPU at a time, the largest first, and
// assigns them. opts.MapReplacements and opts.Cache (the kernel's BTF,
// best parsed once for every collection, and only needed by Programs)
// are used as LoadAndAssign uses them. On error nothing is left open.
func CreateMaps(spec *ebpf.CollectionSpec, objs any, opts ebpf.CollectionOptions, skip map[string]bool) (*Pending, error) {
	kt := opts.Cache
	if kt == nil {
		kt = btf.NewCache()
	}
	// Shallow, without the programs: NewCollectionWithOptions copies each
	// map spec before it changes it. The deep copy this was (every
	// program's instructions and the object's BTF, dropped at once) was
	// 2.6 % of `record -- /bin/true`'s CPU samples; the whole process's
	// time did not move measurably (1.01x in 31 pairs).
	mapsOnly := &ebpf.CollectionSpec{Maps: spec.Maps, Variables: spec.Variables, Types: spec.Types, ByteOrder: spec.ByteOrder}
	all, err := ebpf.NewCollectionWithOptions(mapsOnly, ebpf.CollectionOptions{MapReplacements: opts.MapReplacements, Cache: kt})
	if err != nil {
		return nil, err
	}
	all.Programs = map[string]*ebpf.Program{}
	if err := assign(objs, all, skip, false); err != nil {
		all.Close()
		return nil, err
	}
	return &Pending{spec: spec, all: all, kt: kt, skip: skip}, nil
}

// Programs loads the programs side by side (one per CPU at a time, the
// largest first) and assigns them to objs. On error the programs loaded
// are closed; the maps assigned to objs are the caller's to close.
func (p *Pending) Programs(objs any) error {
	defer p.all.Close() // what objs did not take
	spec := p.spec
	names := make([]string, 0, len(spec.Programs))
	for name := range spec.Programs {
		if !p.skip[name] {
			names = append(names, name)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		return len(spec.Programs[names[i]].Instructions) > len(spec.Programs[names[j]].Instructions)
	})
	maps, err := p.maps(objs)
	if err != nil {
		return err
	}
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
				prog, err := loadOne(spec, name, maps, p.kt)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					p.all.Programs[name] = prog
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, prog := range p.all.Programs {
			prog.Close()
		}
		p.all.Programs = nil
		return err
	}
	return assign(objs, p.all, p.skip, true)
}

// Close releases what objs did not take, when Programs is not to be
// called.
func (p *Pending) Close() { p.all.Close() }

// maps returns every map of the collection by name: those assigned to
// objs and those left in p.all.
func (p *Pending) maps(objs any) (map[string]*ebpf.Map, error) {
	out := make(map[string]*ebpf.Map, len(p.spec.Maps))
	for n, m := range p.all.Maps {
		out[n] = m
	}
	err := walkFields(objs, func(name string, f reflect.Value) error {
		if m, ok := f.Interface().(*ebpf.Map); ok && m != nil {
			out[name] = m
		}
		return nil
	})
	return out, err
}

// assign sets objs' ebpf-tagged fields (in embedded structs too) from c,
// taking each object out of c, as Collection.Assign does: the programs
// when progs is set (one in skip is left nil), else the maps and
// variables.
func assign(objs any, c *ebpf.Collection, skip map[string]bool, progs bool) error {
	return walkFields(objs, func(name string, f reflect.Value) error {
		var obj any
		switch f.Interface().(type) {
		case *ebpf.Program:
			if !progs || skip[name] {
				return nil
			}
			if p := c.Programs[name]; p != nil {
				obj = p
				delete(c.Programs, name)
			}
		case *ebpf.Map:
			if progs {
				return nil
			}
			if m := c.Maps[name]; m != nil {
				obj = m
				delete(c.Maps, name)
			}
		case *ebpf.Variable:
			if progs {
				return nil
			}
			if vr := c.Variables[name]; vr != nil {
				obj = vr
				delete(c.Variables, name)
			}
		default:
			return fmt.Errorf("bpfload: field %s has type %s", name, f.Type())
		}
		if obj == nil {
			return fmt.Errorf("bpfload: no %s %q in the collection", f.Type(), name)
		}
		f.Set(reflect.ValueOf(obj))
		return nil
	})
}

// walkFields calls fn with each ebpf-tagged field of the struct objs
// points to (embedded structs walked) and its tag.
func walkFields(objs any, fn func(name string, f reflect.Value) error) error {
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
			if name := sf.Tag.Get("ebpf"); name != "" {
				if err := fn(name, f); err != nil {
					return err
				}
			}
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

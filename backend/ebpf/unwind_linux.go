package ebpf

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/cilium/ebpf"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/unwind"
)

// Sizes of the unwinder's maps (bpf/unwind.h) with --stacks user and
// unwind tables: 2M rows (16 MiB), 16,384 distinct rules and mapped
// files; distinct walked stacks as the stacks map (allocated as used).
const (
	unwindMaxRows  = 2 << 20
	unwindMaxRules = 16384
	unwindMaxFiles = 16384
)

// bpfTables loads tables into the BPF maps.
type bpfTables struct {
	files, rows, rules *ebpf.Map
}

// kernelFileKey is struct unwind_file_key.
type kernelFileKey struct {
	Ino uint64
	Dev uint32
	Pad uint32
}

const batchRows = 1 << 16

func (b bpfTables) putRules(first uint32, rules []kernelRule) error {
	return batchPut(b.rules, first, rules)
}

func (b bpfTables) putRows(first uint32, rows []kernelRow) error {
	return batchPut(b.rows, first, rows)
}

func batchPut[T any](m *ebpf.Map, first uint32, vals []T) error {
	for len(vals) > 0 {
		n := min(len(vals), batchRows)
		keys := make([]uint32, n)
		for i := range keys {
			keys[i] = first + uint32(i)
		}
		if _, err := m.BatchUpdate(keys, vals[:n], nil); err != nil {
			return err
		}
		vals, first = vals[n:], first+uint32(n)
	}
	return nil
}

func (b bpfTables) putFile(k fileKey, f kernelFile) error {
	return b.files.Put(kernelFileKey{Ino: k.ino, Dev: k.dev}, f)
}

// ustackValue is struct ustack: a walked stack in the ustacks map.
type ustackValue struct {
	Nr, Stop uint32
	IPs      [maxStackDepth]uint64
}

// readUStack returns the frames and stop of key in the ustacks map.
func (p *probes) readUStack(key int32) ([]uint64, uint32, error) {
	var v ustackValue
	if err := p.objs.Ustacks.Lookup(uint32(key), &v); err != nil {
		return nil, 0, fmt.Errorf("walked stack %d: %w", key, err)
	}
	if v.Nr > maxStackDepth {
		return nil, 0, fmt.Errorf("walked stack %d: %d frames", key, v.Nr)
	}
	return append([]uint64(nil), v.IPs[:v.Nr]...), v.Stop, nil
}

// setupUnwind prepares the unwind tables (--stacks user, walked by
// tables): the store, its cache, the walking of stack copies, and the
// tables of each module as it is mapped.
func (r *run) setupUnwind(procRoot string) {
	var cache *unwind.Cache
	dir := r.b.cfg.UnwindCacheDir
	if dir == "" {
		d, err := unwind.DefaultCacheDir()
		if err == nil {
			dir = d
		}
	}
	if dir != "" && dir != "-" {
		c, err := unwind.OpenCache(dir)
		if err != nil {
			r.opts.Warnf(fmt.Sprintf("unwind tables not cached: %v", err))
		} else {
			cache = c
		}
	}
	o := r.pr.objs
	r.tables = newUnwindTables(bpfTables{files: o.UnwindFiles, rows: o.UnwindRows, rules: o.UnwindRules}, cache, unwindMaxRows, unwindMaxRules)
	r.procRoot = procRoot
	r.tr.copies.walk = r.walkCopy
	r.tr.mods.onMapped = func(pid uint32, m *liveModule) {
		r.tables.prefetch(m.key, r.opener(pid, m.fact.Handle, m.fact.Handle+m.fact.Size, m.fact.Name))
	}
}

// opener opens the file mapped at [start, end) in process pid: through
// /proc/PID/map_files (the very file mapped, even if deleted or replaced
// since), else at path (checked by the caller against the mapping's
// device and inode).
func (r *run) opener(pid uint32, start, end uint64, path string) opener {
	end = (end + uint64(os.Getpagesize()) - 1) &^ (uint64(os.Getpagesize()) - 1)
	return func() (*os.File, bool, error) {
		mf := filepath.Join(r.procRoot, strconv.FormatUint(uint64(pid), 10), "map_files", fmt.Sprintf("%x-%x", start, end))
		if f, err := openRegular(mf); err == nil {
			return f, true, nil
		}
		if path == "" {
			return nil, false, errors.New("no path")
		}
		f, err := openRegular(path)
		return f, false, err
	}
}

// openRegular opens a regular file for reading, without blocking on a
// FIFO or device left at its path.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	return f, nil
}

// copyMem is a stack copy as unwind.Memory.
type copyMem struct {
	sp uint64
	b  []byte
}

func (m copyMem) Uint64(a uint64) (uint64, bool) {
	if a < m.sp || a-m.sp > uint64(len(m.b)) || a-m.sp+8 > uint64(len(m.b)) {
		return 0, false
	}
	return le.Uint64(m.b[a-m.sp:]), true
}

// walkCopy walks a stack copy of process pid with the tables of its
// modules (building them now when needed), and makes the file the
// kernel missed known to it for the next time.
func (r *run) walkCopy(pid uint32, c *uStackCopyRec) userPart {
	locate := func(addr uint64) unwind.Place {
		m := r.tr.mods.at(pid, addr)
		if m == nil {
			return unwind.Place{Where: unwind.NotMapped}
		}
		f := &m.fact
		t := r.tables.forFile(m.key, r.opener(pid, f.Handle, f.Handle+f.Size, f.Name))
		return unwind.Place{Where: unwind.InModule, Table: t.tab, Off: addr - f.Handle + f.Offset}
	}
	ips, stop := unwind.Walk(unwind.AMD64, unwind.Regs{PC: c.PC, SP: c.SP, FP: c.FP}, copyMem{sp: c.SP, b: c.Stack}, locate, maxStackDepth)
	if c.MissIno != 0 {
		if m := r.tr.mods.at(pid, c.MissStart); m != nil {
			f := &m.fact
			t := r.tables.forFile(m.key, r.opener(pid, f.Handle, f.Handle+f.Size, f.Name))
			r.tables.alias(fileKey{dev: c.MissDev, ino: c.MissIno}, c.MissSize, t)
		}
	}
	return userPart{ips: ips, stop: uint32(stop)}
}

// preloadTables builds (or reads from the cache) and loads the tables of
// the code the trace will meet first, before it starts: every file
// mapped executable by the processes traced (system-wide: all), or the
// command's program, its interpreter and the libraries it names.
func (r *run) preloadTables(command []string, pids []uint32) {
	start := time.Now()
	var jobs []func()
	if len(command) > 0 {
		for _, p := range programFiles(command[0]) {
			jobs = append(jobs, func() {
				r.tables.forFile(fileKey{}, func() (*os.File, bool, error) { f, err := openRegular(p); return f, false, err })
			})
		}
	} else {
		seen := map[fileKey]bool{}
		for _, pid := range pids {
			b, err := r.tr.readMaps(pid)
			if err != nil {
				continue
			}
			ms, _ := parseMaps(b)
			for _, m := range ms {
				k := fileKey{dev: m.dev, ino: m.inode}
				if !m.exec || seen[k] {
					continue
				}
				seen[k] = true
				open := r.opener(pid, m.start, m.end, m.path)
				jobs = append(jobs, func() { r.tables.forFile(k, open) })
			}
		}
	}
	runJobs(jobs, runtime.GOMAXPROCS(0))
	r.tables.preload = time.Since(start)
}

func runJobs(jobs []func(), n int) {
	ch := make(chan func())
	var wg sync.WaitGroup
	for range max(n, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				j()
			}
		}()
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
}

// libDirs are searched for the libraries a program names (DT_NEEDED) when
// it gives no run path: the dynamic loader's default and multiarch
// directories. A library found elsewhere at run time is loaded then.
var libDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"}

// programFiles returns the program a command runs, its interpreter and
// the libraries they name, transitively, as found on this system.
func programFiles(name string) []string {
	prog, err := exec.LookPath(name)
	if err != nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	var visit func(path string, depth int)
	visit = func(path string, depth int) {
		if seen[path] || depth > 8 || len(out) > 256 {
			return
		}
		seen[path] = true
		f, err := elf.Open(path)
		if err != nil {
			return
		}
		out = append(out, path)
		if ip := interpOf(path); ip != "" {
			visit(ip, depth+1)
		}
		needed, _ := f.ImportedLibraries()
		runpath, _ := f.DynString(elf.DT_RUNPATH)
		rpath, _ := f.DynString(elf.DT_RPATH)
		f.Close()
		for _, lib := range needed {
			for _, d := range append(append(splitPaths(runpath, path), splitPaths(rpath, path)...), libDirs...) {
				p := filepath.Join(d, lib)
				if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
					visit(p, depth+1)
					break
				}
			}
		}
	}
	visit(prog, 0)
	return out
}

// splitPaths splits DT_RUNPATH/DT_RPATH values, with $ORIGIN as the
// program's directory.
func splitPaths(vals []string, prog string) []string {
	var out []string
	for _, v := range vals {
		for _, d := range filepath.SplitList(v) {
			if d == "$ORIGIN" || len(d) > 8 && d[:8] == "$ORIGIN/" {
				d = filepath.Join(filepath.Dir(prog), d[len("$ORIGIN"):])
			}
			if d != "" {
				out = append(out, d)
			}
		}
	}
	return out
}

// unwindStats adds the unwinder's counters to s.
func (r *run) unwindStats(s *event.Stats) {
	if r.tables == nil {
		return
	}
	r.tables.stats(s)
	s.Add(event.CountInfo, "unwind tables: preload time before tracing (ms)", uint64(r.tables.preload.Milliseconds()))
}

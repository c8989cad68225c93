package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/crafted"
	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/symbolize"
	"github.com/iotrace/iotrace/symbolize/pdb"
)

// fuzzMaxAlloc is what reading one fuzzed input may allocate in all.
const fuzzMaxAlloc = 512 << 20

// FuzzReadUntrusted: a trace of arbitrary module, stack and kernel
// symbol facts and events, read with an arbitrary ELF file and an
// arbitrary PDB in its symbol directory (filed under the identities the
// facts may name, and named by identities that try to leave it), goes
// through print --stacks and report --stacks: no panic, no hang, exit 0,
// and within a memory cap (issue 25).
func FuzzReadUntrusted(f *testing.F) {
	tiny, err := os.ReadFile(filepath.Join("..", "symbolize", "testdata", "tiny.o"))
	if err != nil {
		f.Fatal(err)
	}
	pdbFile, err := os.ReadFile(filepath.Join("..", "symbolize", "pdb", "testdata", "modules.pdb"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte{0, 1, 2, 0, 1, 1, 3, 3, 1, 2, 5, 1, 3, 1, 0}, tiny, pdbFile)
	f.Add([]byte{0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 0, 1, 4, 8, 1, 2, 3, 4, 5, 6, 7, 8, 2, 7, 0, 0x1b, 3, 1, 0, 3, 1, 1}, tiny[:200], pdbFile[:4096])
	f.Add([]byte{0, 2, 3, 1, 0, 1, 1, 2, 1, 200, 1, 2, 3, 4, 3, 1, 2}, []byte("\x7fELF"), crafted.RepeatedBlockMSF(4096, 1<<20))
	f.Fuzz(func(t *testing.T, spec, elfData, pdbData []byte) {
		if len(spec) > 4096 || len(elfData) > 1<<20 || len(pdbData) > 1<<20 {
			return
		}
		dir := testenv.TempDir(t)
		syms := filepath.Join(dir, "syms")
		ids := fuzzSymbolDir(t, syms, elfData, pdbData)
		tr := fuzzTrace(spec, ids)
		trace := filepath.Join(dir, "t.iot")
		if err := tr.Write(trace); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		defer testenv.FailHung("print and report of a fuzzed trace")()
		for _, cmd := range [][]string{
			{"print", "--stacks", "--symbols", syms, trace},
			{"report", "--stacks", "--symbols", syms, trace},
		} {
			if _, errOut, code := runCLI(t, cmd...); code != 0 {
				t.Errorf("%s: exit %d: %s", cmd[0], code, errOut)
			}
		}
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n > fuzzMaxAlloc {
			t.Errorf("reading allocated %d MB", n>>20)
		}
	})
}

// fuzzIDs are the identities a fuzzed trace's modules may have: the
// files' own, and ones no file has or that try to leave the directory.
type fuzzIDs struct {
	ids  []string
	elf  string // the ELF file's path
	path string // a module path outside the directory
}

// fuzzSymbolDir files elfData and pdbData in a symbol directory under
// their identities (or made-up ones when they have none).
func fuzzSymbolDir(t *testing.T, syms string, elfData, pdbData []byte) fuzzIDs {
	t.Helper()
	out := fuzzIDs{elf: filepath.Join(syms, "prog"), path: filepath.Join(filepath.Dir(syms), "mod.so")}
	write := func(path string, b []byte) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(out.elf, elfData)
	write(out.path, elfData)
	gnu := "gnu:00112233445566778899aabbccddeeff00112233"
	if id, err := symbolize.ReadID(out.elf); err == nil && id != "" {
		gnu = id
	}
	if len(gnu) > 6 && gnu[:4] == "gnu:" {
		write(filepath.Join(syms, gnu[4:], "debuginfo"), elfData)
		write(filepath.Join(syms, ".build-id", gnu[4:6], gnu[6:]+".debug"), elfData)
	}
	key := "00112233445566778899AABBCCDDEEFF1"
	if p, err := pdb.Parse(bytes.NewReader(pdbData), int64(len(pdbData))); err == nil {
		key = pdb.SymStoreKey(p.GUID, p.Age)
	}
	write(filepath.Join(syms, "f.pdb", key, "f.pdb"), pdbData)
	out.ids = []string{gnu, "pdb:f.pdb/" + key, "go:abc/def", "", "gnu:../../x", "pdb:f.pdb/../../y", "pdb:../f.pdb/" + key, "pe:1234/5000"}
	return out
}

// fuzzTrace reads spec as a list of facts and events, in stream order:
// each starts with a byte choosing what it is, the bytes after it its
// fields.
func fuzzTrace(spec []byte, ids fuzzIDs) *crafted.Trace {
	tr := &crafted.Trace{Facts: []event.Fact{{Kind: event.FactProcess, Rundown: true, Pid: crafted.Pid, Name: "fuzz"}}}
	var pending []event.Fact  // facts since the last event
	var before [][]event.Fact // the facts before each event
	add := func(f event.Fact) { pending = append(pending, f) }
	next := func() byte {
		if len(spec) == 0 {
			return 0
		}
		b := spec[0]
		spec = spec[1:]
		return b
	}
	word := func() uint64 { return uint64(next())<<8 | uint64(next()) }
	pid := func() uint32 {
		if p := next() % 3; p > 0 {
			return crafted.Pid + uint32(p) - 1
		}
		return 0
	}
	var at int64
	for len(spec) > 0 && len(tr.Events) < 64 {
		at += 1000
		switch next() % 4 {
		case 0:
			m := event.Fact{Kind: event.FactModule, Pid: pid(), Handle: word() << 12, Size: word() << 8, Offset: word(), Time: at}
			m.Rundown = next()&1 == 1
			m.End = next()&7 == 0
			m.Name = []string{ids.elf, ids.path, "/nonexistent/lib.so", "relative/lib.so", `C:\w\f.dll`}[next()%5]
			m.Detail = ids.ids[int(next())%len(ids.ids)]
			if len(m.Detail) > 4 && m.Detail[:4] == "pdb:" {
				m.Image = m.Detail
			}
			add(m)
		case 1:
			s := event.Fact{Kind: event.FactStack, Handle: uint64(next()%4) + 1}
			for range next() % 32 {
				s.User = append(s.User, word()<<12|word())
			}
			for range next() % 4 {
				s.Kernel = append(s.Kernel, 0xffff_ffff_8100_0000|word()<<8)
			}
			add(s)
		case 2:
			add(event.Fact{Kind: event.FactKernelSymbol, Handle: 0xffff_ffff_8100_0000 | word()<<8,
				Size: word(), Name: string([]byte{'k', next(), next()}), Detail: []string{"", "mod\x1b"}[next()%2]})
		case 3:
			e := crafted.Write(uint64(len(tr.Events)+1), at, uint64(next()%5))
			e.Pid = crafted.Pid + uint32(next()%2)
			tr.Events = append(tr.Events, e)
			before, pending = append(before, pending), nil
		}
	}
	tr.Interleave = func(i int) []event.Fact { return before[i] }
	return tr
}

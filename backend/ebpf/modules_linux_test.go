package ebpf

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/symbolize"
)

// TestExecModuleThroughLink: a program exec'd through a symbolic link
// (Debian's /usr/bin/python3 → python3.11) is recorded as a module under
// the file's own path, as /proc/PID/maps names it: a reader opens a
// module path without following a final link, and under the link's path
// every frame of the program stayed unnamed ("could not be read").
func TestExecModuleThroughLink(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(exe, &st); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "prog")
	if err := os.Symlink(exe, link); err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	tr := newTracker(sink, 0, nil)
	tr.mods = newModuleTable(tr.fact)
	tr.execPath[10] = link
	dev := uint32(st.Dev>>8&0xfff)<<20 | uint32(st.Dev&0xff|st.Dev>>12&^0xff)
	tr.execMaps(&execMapsRec{Pid: 10, Exe: codeMap{Start: 0x40_0000, End: 0x50_0000, Ino: st.Ino, Dev: dev}})
	var mod *event.Fact
	for i := range sink.facts {
		if sink.facts[i].Kind == event.FactModule {
			mod = &sink.facts[i]
		}
	}
	if mod == nil || mod.Name != exe || tr.execMapsMissed != 0 {
		t.Fatalf("module %+v (%d exec maps missed): want %s", mod, tr.execMapsMissed, exe)
	}
	m := symbolize.Module{Path: mod.Name, ID: mod.Detail, Start: mod.Handle, End: mod.Handle + mod.Size,
		Offset: mod.Offset, Vaddr: mod.Vaddr, VaddrKnown: mod.Flags&event.FactVaddr != 0}
	if f := symbolize.New(symbolize.Options{DebugDirs: []string{}}).Symbolize(&m, m.Start+0x100); f.Reason == symbolize.BadFile {
		t.Errorf("the module's file could not be read: %+v", f)
	}
}

package ebpf

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/unwind"
)

// fakeKernel records what the store loads.
type fakeKernel struct {
	rules map[uint32]kernelRule
	rows  map[uint32]kernelRow
	files map[fileKey]kernelFile
}

func newFakeKernel() *fakeKernel {
	return &fakeKernel{rules: map[uint32]kernelRule{}, rows: map[uint32]kernelRow{}, files: map[fileKey]kernelFile{}}
}

func (k *fakeKernel) putRules(first uint32, rules []kernelRule) error {
	for i, r := range rules {
		k.rules[first+uint32(i)] = r
	}
	return nil
}

func (k *fakeKernel) putRows(first uint32, rows []kernelRow) error {
	for i, r := range rows {
		k.rows[first+uint32(i)] = r
	}
	return nil
}

func (k *fakeKernel) putFile(key fileKey, f kernelFile) error {
	k.files[key] = f
	return nil
}

// copyFile copies src into dir (a new inode) and returns its path and key.
func copyFile(t *testing.T, src, dir, name string) (string, fileKey, uint64) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return p, fileKey{dev: kernelDevOf(st.Dev), ino: st.Ino}, uint64(st.Size)
}

func pathOpener(p string, exact bool) opener {
	return func() (*os.File, bool, error) {
		f, err := openRegular(p)
		return f, exact, err
	}
}

// TestUnwindTablesShared: two files with one build ID (copies of one
// binary) share one table, built once and loaded once; the kernel is told
// each file's size and rows; a second store with the same cache reads the
// table instead of building it; the rules in the kernel are the table's.
func TestUnwindTablesShared(t *testing.T) {
	dir := t.TempDir()
	a, ka, size := copyFile(t, "/usr/bin/ls", dir, "a")
	b, kb, _ := copyFile(t, "/usr/bin/ls", dir, "b")
	cache, err := unwind.OpenCache(filepath.Join(dir, "cache", "unwind"))
	if err != nil {
		t.Fatal(err)
	}
	k := newFakeKernel()
	u := newUnwindTables(k, cache, 1<<20, 1024)
	ta := u.forFile(ka, pathOpener(a, false))
	tb := u.forFile(kb, pathOpener(b, false))
	if ta.tab == nil || ta != tb || !ta.placed {
		t.Fatalf("tables %+v, %+v: want one, placed", ta, tb)
	}
	if u.built != 1 || u.cached != 0 || len(k.rows) != len(ta.tab.Rows) {
		t.Errorf("built %d, cached %d, %d rows loaded for a table of %d", u.built, u.cached, len(k.rows), len(ta.tab.Rows))
	}
	for _, key := range []fileKey{ka, kb} {
		f := k.files[key]
		if f.Kind != uint8(unwind.KindCFI) || f.Size != size || f.Start != ta.first || f.Count != ta.count {
			t.Errorf("file %+v: %+v", key, f)
		}
	}
	for i, r := range ta.tab.Rows {
		kr := k.rows[ta.first+uint32(i)]
		if uint64(kr.Off) != r.Off || k.rules[kr.Rule] != kernelRuleOf(r.Rule) {
			t.Fatalf("row %d: %+v, rule %+v; want %+v", i, kr, k.rules[kr.Rule], r)
		}
	}
	u2 := newUnwindTables(newFakeKernel(), cache, 1<<20, 1024)
	if t2 := u2.forFile(ka, pathOpener(a, false)); t2.tab == nil || u2.built != 0 || u2.cached != 1 || len(t2.tab.Rows) != len(ta.tab.Rows) {
		t.Errorf("from the cache: built %d, cached %d, %+v", u2.built, u2.cached, t2)
	}
}

// TestUnwindTablesFullAndWrongFile: a table that does not fit is told to
// the kernel as such (its frames end walks: STOP_MAP_FULL) and counted; a
// file at the module's path that is not the one mapped is not used for
// it, unless it was opened through the mapping itself (then it is the
// same file under another device and inode: known under both).
func TestUnwindTablesFullAndWrongFile(t *testing.T) {
	dir := t.TempDir()
	a, ka, _ := copyFile(t, "/usr/bin/ls", dir, "a")
	k := newFakeKernel()
	u := newUnwindTables(k, nil, 10, 1024)
	if te := u.forFile(ka, pathOpener(a, false)); !te.full || k.files[ka].Kind != kindFull {
		t.Errorf("table too big: %+v, kernel file %+v", te, k.files[ka])
	}
	var s event.Stats
	u.stats(&s)
	if s.Total(event.CountUnresolved) == 0 {
		t.Errorf("a table not loaded is not counted: %+v", s)
	}

	other := fileKey{dev: ka.dev, ino: ka.ino + 1}
	if te := u.forFile(other, pathOpener(a, false)); te.tab != nil || te.err == nil {
		t.Errorf("another file at the path was used: %+v", te)
	}
	overlay := fileKey{dev: 99, ino: 7}
	u2 := newUnwindTables(k, nil, 1<<20, 1024)
	if te := u2.forFile(overlay, pathOpener(a, true)); te.tab == nil || k.files[overlay].Kind != uint8(unwind.KindCFI) {
		t.Errorf("the mapped file under another key: %+v, kernel %+v", te, k.files[overlay])
	}
}

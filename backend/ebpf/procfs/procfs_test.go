package procfs

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/iotrace/iotrace/internal/testenv"
)

func TestParseStat(t *testing.T) {
	st, err := ParseStat([]byte("1234 (my (odd) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 10 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Pid != 1234 || st.PPid != 1 || st.Comm != "my (odd) name" || st.StartTicks != 98765 {
		t.Errorf("%+v", st)
	}
	for _, bad := range []string{"", "12 no parens", "x (a) S 1", "1 (a) S 1 2 3"} {
		if _, err := ParseStat([]byte(bad)); err == nil {
			t.Errorf("ParseStat(%q) accepted", bad)
		}
	}
}

func TestCmdlineAndFDInfo(t *testing.T) {
	if got := Cmdline([]byte("cc\x00-o\x00a b\x00\x00")); got != `cc -o "a b"` {
		t.Errorf("Cmdline: %s", got)
	}
	if got := Cmdline(nil); got != "" {
		t.Errorf("empty cmdline: %q", got)
	}
	if ino, ok := FDInfoIno([]byte("pos:\t0\nflags:\t02100002\nmnt_id:\t25\nino:\t1234567\n")); !ok || ino != 1234567 {
		t.Errorf("FDInfoIno = %d, %v", ino, ok)
	}
	if _, ok := FDInfoIno([]byte("pos:\t0\n")); ok {
		t.Error("FDInfoIno without an ino line: ok")
	}
	f, ok := FDInfoFlags([]byte("pos:\t0\nflags:\t02100002\nmnt_id:\t25\n"))
	if !ok || f != 0o2100002 || f&OCloexec == 0 {
		t.Errorf("FDInfoFlags = %o, %v", f, ok)
	}
}

func TestDevices(t *testing.T) {
	if d := KernelDev(8<<20 | 3); d.Major != 8 || d.Minor != 3 {
		t.Errorf("KernelDev: %v", d)
	}
	// makedev(259, 65540) in glibc's encoding.
	dev := uint64(259&0xfff)<<8 | uint64(65540&0xff) | uint64(65540&^0xff)<<12
	if d := UserDev(dev); d.Major != 259 || d.Minor != 65540 {
		t.Errorf("UserDev: %v", d)
	}
}

func TestDescendants(t *testing.T) {
	parents := map[uint32]uint32{2: 1, 3: 2, 4: 3, 5: 1, 6: 5}
	got := Descendants(parents, []uint32{2})
	for p, want := range map[uint32]bool{2: true, 3: true, 4: true, 5: false, 1: false} {
		if got[p] != want {
			t.Errorf("pid %d: %v", p, got[p])
		}
	}
}

// TestFakeTree reads a /proc-like tree built in a temporary directory.
func TestFakeTree(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need privileges on Windows")
	}
	root := testenv.TempDir(t)
	p := filepath.Join(root, "77")
	for _, d := range []string{"fd", "fdinfo"} {
		if err := os.MkdirAll(filepath.Join(p, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	target := filepath.Join(root, "data.txt")
	os.WriteFile(target, []byte("x"), 0o644)
	os.WriteFile(filepath.Join(p, "stat"), []byte("77 (app) S 1 77 77 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 500 0 0"), 0o644)
	os.WriteFile(filepath.Join(p, "cmdline"), []byte("app\x00--x\x00"), 0o644)
	os.WriteFile(filepath.Join(p, "fdinfo", "3"), []byte("pos:\t0\nflags:\t02000002\n"), 0o644)
	os.Symlink("/srv", filepath.Join(p, "cwd"))
	os.Symlink("/usr/bin/app", filepath.Join(p, "exe"))
	os.Symlink(target, filepath.Join(p, "fd", "3"))
	os.Symlink("pipe:[99]", filepath.Join(p, "fd", "4"))
	os.MkdirAll(filepath.Join(root, "self"), 0o755)

	fs := &FS{Root: root, Origin: 10_000_000_000}
	pids, err := fs.Pids()
	if err != nil || len(pids) != 1 || pids[0] != 77 {
		t.Fatalf("Pids = %v, %v", pids, err)
	}
	snap, ok := fs.Snapshot(77)
	if !ok {
		t.Fatal("no snapshot")
	}
	if snap.Comm != "app" || snap.PPid != 1 || snap.Image != "/usr/bin/app" || snap.Cmdline != "app --x" || snap.Cwd != "/srv" {
		t.Errorf("process: %+v", snap.ProcInfo)
	}
	if snap.Start != 5_000_000_000-10_000_000_000 {
		t.Errorf("start %d", snap.Start)
	}
	d := snap.FDs[3]
	if d.Path != target || !d.Cloexec || d.Flags != 2 {
		t.Errorf("fd 3: %+v", d)
	}
	if runtime.GOOS == "linux" && d.Ino == 0 {
		t.Errorf("fd 3: no inode")
	}
	if snap.FDs[4].Path != "pipe:[99]" {
		t.Errorf("fd 4: %+v", snap.FDs[4])
	}
	if _, ok := fs.Snapshot(78); ok {
		t.Error("snapshot of a missing process")
	}
	// Only the descriptors kept are read.
	var asked []int32
	only4, ok := fs.SnapshotFDs(77, func(fd int32) bool { asked = append(asked, fd); return fd == 4 })
	if !ok || len(only4.FDs) != 1 || only4.FDs[4].Path != "pipe:[99]" || len(asked) != 2 {
		t.Errorf("SnapshotFDs keeping fd 4: %+v (asked about %v)", only4.FDs, asked)
	}
}

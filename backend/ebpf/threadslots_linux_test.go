package ebpf

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

// Workload "threads"'s threads: threadWorkers at once, then seqThreads
// one after the other, seqReads reads each.
const (
	threadWorkers = 4
	seqThreads    = 16
	seqReads      = 100
)

// Workload "threads": threadWorkers threads, each on its own OS thread
// named wk<i>, read $WL_DIR/r<i> $WL_N times with pread64, then write 256
// KiB to $WL_DIR/w<i> and fsync it (block I/O the fsync causes); then
// seqThreads threads one after the other, named sq<k>, each read
// $WL_DIR/s<k> seqReads times and exit (their slots freed and taken again
// by the next); then a thread that is not the leader execs /bin/true,
// taking over the leader's ID.
func workloadThreads() {
	dir := os.Getenv("WL_DIR")
	n, err := strconv.Atoi(os.Getenv("WL_N"))
	must(err)
	reads := func(name string, count int) {
		must(unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(unsafe.StringData(name+"\x00"))), 0, 0, 0))
		fd := mustFD(unix.Open(filepath.Join(dir, name), unix.O_RDONLY, 0))
		var b [64]byte
		for k := range count {
			_, err := unix.Pread(fd, b[:], int64(k%64))
			must(err)
		}
		must(unix.Close(fd))
	}
	var wg sync.WaitGroup
	for i := range threadWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			reads(fmt.Sprintf("wk%d", i), n)
			w := mustFD(unix.Open(filepath.Join(dir, fmt.Sprintf("w%d", i)), unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, 0o600))
			_, err := unix.Write(w, make([]byte, 256<<10))
			must(err)
			must(unix.Fsync(w))
			must(unix.Close(w))
		}()
	}
	wg.Wait()
	for k := range seqThreads {
		done := make(chan struct{})
		go func() {
			defer close(done)
			runtime.LockOSThread()
			reads(fmt.Sprintf("sq%d", k), seqReads)
		}()
		<-done
	}
	execErr := make(chan error)
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			execErr <- fmt.Errorf("the exec thread is the leader")
			return
		}
		execErr <- syscall.Exec("/bin/true", []string{"true"}, os.Environ())
	}()
	must(<-execErr)
}

// TestThreadSlots: the threads' calls pair and carry their thread's name,
// their fsyncs the block I/O they caused, and a non-leader thread's execve
// pairs, whether the threads keep their state in the array of thread
// slots (the default size: each its own), in task-local storage (one
// slot: all but one thread there), or both, with slots freed and taken
// again (four slots, sixteen threads one after the other: a slot taken
// again unclean would keep the last thread's name from the next).
func TestThreadSlots(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, slots := range []int{0, 1, 4} {
		t.Run(fmt.Sprintf("slots=%d", slots), func(t *testing.T) {
			dir := t.TempDir()
			const n = 2000
			var names []string
			for i := range threadWorkers {
				names = append(names, fmt.Sprintf("wk%d", i))
			}
			for k := range seqThreads {
				names = append(names, fmt.Sprintf("sq%d", k))
			}
			for _, name := range names {
				if err := os.WriteFile(filepath.Join(dir, name), make([]byte, 4096), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("IOTRACE_WORKLOAD", "threads")
			t.Setenv("WL_DIR", dir)
			t.Setenv("WL_N", strconv.Itoa(n))
			sink := &memSink{}
			opts := backend.Options{Command: []string{self}, Layers: []event.Layer{event.LayerFile, event.LayerBlock},
				Warn: func(m string) { t.Logf("warn: %s", m) }}
			if err := New(Config{MarkerDir: "-", ThreadSlots: slots}).Run(context.Background(), opts, sink); err != nil {
				t.Fatal(err)
			}
			tids := map[uint32]bool{}
			for j, name := range names {
				want := seqReads
				if j < threadWorkers {
					want = n
				}
				r := filepath.Join(dir, name)
				reads := find(sink.events, byNative("pread64"), byPath(r))
				if len(reads) != want {
					t.Fatalf("%s: %d reads, want %d", r, len(reads), want)
				}
				tid := reads[0].Tid
				for _, e := range reads {
					if e.Tid != tid || e.Status != event.StatusOK || e.Bytes != 64 || e.Comm != name {
						t.Fatalf("%s: read by %d (%q), %v, %d bytes; want by %d (%q), ok, 64", r, e.Tid, e.Comm, e.Status, e.Bytes, tid, name)
					}
				}
				if j < threadWorkers {
					if tids[tid] {
						t.Errorf("%s read by thread %d, which read another worker's file too", r, tid)
					}
					tids[tid] = true
					w := filepath.Join(dir, fmt.Sprintf("w%d", j))
					f := one(t, w+": fsync", sink.events, byNative("fsync"), byPath(w))
					if f.Tid != tid || f.CausedIOs == 0 || f.CausedBytes < 256<<10 {
						t.Errorf("%s: fsync by %d caused %d bios, %d bytes; want by %d, >= 1 bio, >= %d bytes", w, f.Tid, f.CausedIOs, f.CausedBytes, tid, 256<<10)
					}
				}
			}
			var execs []event.Event
			for _, e := range find(sink.events, byNative("execve")) {
				if e.Path == "/bin/true" {
					execs = append(execs, e)
				}
			}
			if len(execs) != 1 || execs[0].Status != event.StatusOK || execs[0].Duration <= 0 || execs[0].Tid != execs[0].Pid {
				t.Fatalf("execve of /bin/true by a non-leader thread: %d events (%+v), want 1, ok, by the leader's ID", len(execs), execs)
			}
			st := sink.trailer.Stats
			for _, k := range []event.CounterKind{event.CountLost, event.CountUnpaired} {
				if got := st.Total(k); got != 0 {
					t.Errorf("%d %v, want 0: %+v", got, k, st.Problems())
				}
			}
			// With a slot each, only the exec went to task storage (its
			// thread takes the leader's ID); with one slot, at least the
			// workers did.
			inStorage := st.Get(event.CountInfo, counterDesc[cStateStorage].name)
			if slots == 0 && inStorage != 1 || slots == 1 && inStorage < threadWorkers {
				t.Errorf("%d thread states in task storage with %d slots", inStorage, slots)
			}
			t.Logf("%d thread states in task storage", inStorage)
		})
	}
}

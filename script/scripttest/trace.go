package scripttest

import (
	"sort"

	"github.com/iotrace/iotrace/event"
)

// Build returns a small, hand-built Linux trace with known answers, the
// input of every example script's test (script/examples_test.go). It spans
// 12.5 s:
//
//   - postgres (pid 100) reads /data/base/16384 sequentially, 12 x 8 KiB,
//     one per second from 10 ms; even reads hit the cache (20 us), odd
//     reads i go to nvme0n1 (259:0) and take (2+i) ms, their bio
//     0.5 ms less. Slower than 10 ms: reads 9 (11 ms) and 11 (13 ms).
//   - app (pid 300) appends 10 x 512 B to /var/log/app.log (one per second
//     from 0.5 s, 15 us each) and writes 4 KiB at random offsets of
//     /var/lib/app/db (6 writes, every 2 s from 0.7 s, 30 us each); it
//     fsyncs app.log at 5 s (2 ms) and 10 s (4 ms) and the db at 3 s
//     (40 ms, causing an 8 KiB write to sda 8:0 of 35 ms) and 9 s (9 ms).
//     The 10 s fsync of app.log causes a 1 ms block flush on sda.
//   - kworker/u8:2 (pid 50) writes back 64 KiB to sda at 6 s (5 ms) and
//     11 s (6 ms).
//   - backup (pid 200) fails to open /etc/missing.conf (ENOENT) at 1.5 s,
//     opens /data/base/16384 at 2 s, reads 1 MiB at 2.1 s (25 ms, two
//     512 KiB bios on nvme0n1 of 20 and 22 ms), reads the next 1 MiB from
//     the cache at 7.1 s (8 ms), closes at 7.2 s, and gets EIO reading
//     /data/bad at 8 s (1 ms).
func Build() (event.Header, []event.Fact, []event.Event, event.Trailer) {
	const ms = int64(1_000_000)
	const us = int64(1_000)
	h := event.Header{
		Source: event.SourceEBPF, OS: "linux", OSVersion: "6.18.0", Hostname: "testhost",
		CPUs: 4, PointerSize: 8, StartWall: 1_767_225_600_000_000_000,
		Clock:  event.Clock{Kind: event.ClockMonotonic, Freq: 1_000_000_000},
		Tool:   "iotrace test",
		Layers: event.LayersOf(event.LayerFile, event.LayerBlock),
	}
	sda := event.Device{Major: 8, Minor: 0}
	nvme := event.Device{Major: 259, Minor: 0}
	facts := []event.Fact{
		{Kind: event.FactDevice, Dev: sda, Name: "sda", Rundown: true},
		{Kind: event.FactDevice, Dev: nvme, Name: "nvme0n1", Rundown: true},
		{Kind: event.FactProcess, Pid: 100, Name: "postgres", Rundown: true},
		{Kind: event.FactProcess, Pid: 200, Name: "backup", Rundown: true},
		{Kind: event.FactProcess, Pid: 300, Name: "app", Rundown: true},
		{Kind: event.FactProcess, Pid: 50, Name: "kworker/u8:2", Rundown: true},
	}
	var evs []event.Event
	var id uint64
	// add returns the stored event, valid until the next add.
	add := func(e event.Event) *event.Event {
		id++
		e.ID = id
		e.Source = event.SourceEBPF
		if e.Layer == event.LayerUnknown {
			e.Layer = e.Op.Layer()
		}
		if e.Status == event.StatusUnknown {
			e.Status = event.StatusOK
		}
		evs = append(evs, e)
		return &evs[len(evs)-1]
	}
	file := func(pid uint32, comm string, op event.Op, native string, t, lat int64, path string, fd int32, off int64, size uint64, bytes int64) event.Event {
		e := event.New()
		e.Op, e.Native, e.Time, e.Duration = op, native, t, lat
		e.Pid, e.Tid, e.Comm, e.CPU = pid, pid+1, comm, pid%4
		e.Path, e.FD, e.Offset, e.Size, e.Bytes = path, fd, off, size, bytes
		return e
	}
	block := func(pid uint32, comm string, op event.Op, t, lat int64, dev event.Device, sector, size uint64, cause uint64, flags event.Flags) {
		e := event.New()
		e.Op, e.Native, e.Time, e.Duration, e.Wait = op, "block_rq", t, lat, lat/5
		e.Pid, e.Tid, e.Comm, e.CPU = pid, pid+1, comm, 2
		e.Dev, e.Sector, e.Size, e.Bytes, e.Cause, e.Flags = dev, sector, size, int64(size), cause, flags
		e.Request = 0xffff_8880_0000_0000 + id*0x100
		add(e)
	}

	// postgres: sequential 8 KiB reads, odd ones from disk.
	for i := int64(0); i < 12; i++ {
		e := file(100, "postgres", event.OpRead, "pread64", i*1000*ms+10*ms, 20*us, "/data/base/16384", 5, i*8192, 8192, 8192)
		if i%2 == 0 {
			e.Flags = event.FlagCacheHit
			add(e)
			continue
		}
		e.Duration = (2 + i) * ms
		e.CausedIOs, e.CausedBytes = 1, 8192
		p := add(e)
		block(100, "postgres", event.OpBlockRead, p.Time+250*us, p.Duration-500*us, nvme, uint64(1000+i*16), 8192, p.ID, event.FlagSync)
	}
	// app: appends to its log.
	for k := int64(0); k < 10; k++ {
		add(file(300, "app", event.OpWrite, "write", 500*ms+k*1000*ms, 15*us, "/var/log/app.log", 3, k*512, 512, 512))
	}
	// app: random 4 KiB writes to its database.
	for k, off := range []int64{40960, 4096, 81920, 8192, 122880, 12288} {
		add(file(300, "app", event.OpWrite, "pwrite64", 700*ms+int64(k)*2000*ms, 30*us, "/var/lib/app/db", 4, off, 4096, 4096))
	}
	// app: fsyncs.
	fsync := file(300, "app", event.OpFlush, "fsync", 3000*ms, 40*ms, "/var/lib/app/db", 4, -1, 0, 0)
	fsync.CausedIOs, fsync.CausedBytes = 1, 8192
	fs := add(fsync) // valid until the next add: read at once
	block(300, "app", event.OpBlockWrite, 3000*ms+2*ms, 35*ms, sda, 50_000, 8192, fs.ID, event.FlagSync)
	add(file(300, "app", event.OpFlush, "fsync", 5000*ms, 2*ms, "/var/log/app.log", 3, -1, 0, 0))
	add(file(300, "app", event.OpFlush, "fdatasync", 9000*ms, 9*ms, "/var/lib/app/db", 4, -1, 0, 0))
	fl := add(file(300, "app", event.OpFlush, "fsync", 10000*ms, 4*ms, "/var/log/app.log", 3, -1, 0, 0))
	block(300, "app", event.OpBlockFlush, 10000*ms+2*ms, 1*ms, sda, 0, 0, fl.ID, event.FlagPreflush)
	// writeback.
	block(50, "kworker/u8:2", event.OpBlockWrite, 6000*ms, 5*ms, sda, 80_000, 65536, 0, event.FlagWriteback)
	block(50, "kworker/u8:2", event.OpBlockWrite, 11000*ms, 6*ms, sda, 90_000, 65536, 0, event.FlagWriteback)
	// backup.
	miss := file(200, "backup", event.OpOpen, "openat", 1500*ms, 40*us, "/etc/missing.conf", -1, -1, 0, -1)
	miss.Status, miss.Code = event.StatusNotFound, 2
	add(miss)
	add(file(200, "backup", event.OpOpen, "openat", 2000*ms, 50*us, "/data/base/16384", 7, -1, 0, -1))
	big := file(200, "backup", event.OpRead, "read", 2100*ms, 25*ms, "/data/base/16384", 7, 0, 1<<20, 1<<20)
	big.CausedIOs, big.CausedBytes = 2, 1<<20
	b := add(big)
	block(200, "backup", event.OpBlockRead, 2100*ms+1*ms, 20*ms, nvme, 200_000, 512<<10, b.ID, 0)
	block(200, "backup", event.OpBlockRead, 2100*ms+2*ms, 22*ms, nvme, 201_024, 512<<10, b.ID, 0)
	add(file(200, "backup", event.OpRead, "read", 7100*ms, 8*ms, "/data/base/16384", 7, 1<<20, 1<<20, 1<<20))
	add(file(200, "backup", event.OpClose, "close", 7200*ms, 5*us, "/data/base/16384", 7, -1, 0, -1))
	bad := file(200, "backup", event.OpRead, "read", 8000*ms, 1*ms, "/data/bad", 9, 0, 4096, -1)
	bad.Status, bad.Code = event.StatusIOError, 5
	add(bad)

	// Deliver in completion order, as a live backend does.
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].End() < evs[j].End() })
	tr := event.Trailer{End: 12500 * ms}
	tr.Stats.Add(event.CountInfo, "events received", uint64(len(evs)))
	return h, facts, evs, tr
}

// Replay delivers a trace to a sink.
func Replay(sink event.Sink, h event.Header, facts []event.Fact, evs []event.Event, tr event.Trailer) error {
	if err := sink.Begin(&h); err != nil {
		return err
	}
	for i := range facts {
		if err := sink.Fact(&facts[i]); err != nil {
			return err
		}
	}
	for i := range evs {
		e := evs[i]
		if err := sink.Event(&e); err != nil {
			return err
		}
	}
	return sink.End(&tr)
}

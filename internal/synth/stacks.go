package synth

import "github.com/iotrace/iotrace/event"

// StacksTrace returns a small Linux trace with stacks: a process, its
// module facts (an executable with a GNU build-id and its virtual
// address, a library, a module unmapped later), the kernel's module and
// the kernel symbols the stacks need, three stacks (user only, user and
// kernel with a truncated user part, kernel only) and events that refer
// to them, plus an event without a stack. Every stack and module field
// is set somewhere, so it is meant for encoder round-trip tests.
func StacksTrace() *Recorded {
	r := &Recorded{
		Began: true,
		Ended: true,
		Header: event.Header{
			Source: event.SourceSynthetic, OS: "linux", OSVersion: "6.18.0-synth", CPUs: 2, PointerSize: 8,
			StartWall: defaultStartWall, Clock: event.Clock{Kind: event.ClockMonotonic, Freq: 1e9},
			Tool: "iotrace synth (stacks)",
		},
	}
	const pid, start = 4242, -5_000_000
	fact := func(f event.Fact) {
		r.Facts = append(r.Facts, f)
		r.Order = append(r.Order, Item{ItemFact, len(r.Facts) - 1})
	}
	ev := func(e event.Event) {
		r.Events = append(r.Events, e)
		r.Order = append(r.Order, Item{ItemEvent, len(r.Events) - 1})
	}
	fact(event.Fact{Kind: event.FactProcess, Rundown: true, Pid: pid, ProcStart: start, Name: "app", Image: "/usr/bin/app", Detail: "app --run"})
	fact(event.Fact{Kind: event.FactModule, Rundown: true, Pid: pid, ProcStart: start, Handle: 0x5555_5555_4000, Size: 0x3000, Offset: 0x1000,
		Vaddr: 0x1000, Flags: event.FactVaddr, Name: "/usr/bin/app", Detail: "gnu:0123456789abcdef0123456789abcdef01234567"})
	fact(event.Fact{Kind: event.FactModule, Rundown: true, Pid: pid, ProcStart: start, Handle: 0x7f00_0002_8000, Size: 0x16_0000, Offset: 0x28000,
		Name: "/usr/lib/x86_64-linux-gnu/libc.so.6", Detail: "gnu:fedcba9876543210fedcba9876543210fedcba98"})
	fact(event.Fact{Kind: event.FactModule, Pid: 0, Handle: 0xffff_ffff_8100_0000, Size: 0x200_0000,
		Name: "[kernel.kallsyms]", Detail: "gnu:00112233445566778899aabbccddeeff00112233"})
	fact(event.Fact{Kind: event.FactKernelSymbol, Handle: 0xffff_ffff_8140_0000, Size: 0x120, Name: "ksys_write"})
	fact(event.Fact{Kind: event.FactKernelSymbol, Handle: 0xffff_ffff_8150_0000, Name: "ext4_file_write_iter", Detail: "ext4"})
	fact(event.Fact{Kind: event.FactStack, Time: 1000, Handle: 1,
		User: []uint64{0x5555_5555_5123, 0x5555_5555_5456, 0x7f00_0002_9abc}})
	e := event.New()
	e.ID, e.Source, e.Layer, e.Op, e.Native = 1, event.SourceSynthetic, event.LayerFile, event.OpWrite, "write"
	e.Time, e.Duration, e.Pid, e.Tid, e.ProcStart, e.Comm = 1000, 5000, pid, pid, start, "app"
	e.Path, e.FD, e.Size, e.Bytes, e.Offset, e.Stack = "/tmp/out", 3, 4096, 4096, 0, 1
	ev(e)
	e.ID, e.Time, e.Duration, e.Offset = 2, 9000, 7000, 4096
	ev(e)
	fact(event.Fact{Kind: event.FactStack, Time: 20000, Handle: 2, Flags: event.FactUserTruncated,
		Kernel: []uint64{0xffff_ffff_8150_0010, 0xffff_ffff_8140_0042},
		User:   []uint64{0x5555_5555_5200}})
	e.ID, e.Op, e.Native, e.Time, e.Duration, e.Size, e.Bytes, e.Stack = 3, event.OpRead, "read", 20000, 3000, 512, 100, 2
	ev(e)
	fact(event.Fact{Kind: event.FactStack, Time: 30000, Handle: 3, Flags: event.FactKernelTruncated | event.FactUserLost,
		Kernel: []uint64{0xffff_ffff_8150_0020}})
	b := event.New()
	b.ID, b.Source, b.Layer, b.Op, b.Native = 4, event.SourceSynthetic, event.LayerBlock, event.OpBlockWrite, "block_rq"
	b.Time, b.Duration, b.Pid, b.Tid, b.ProcStart, b.Comm = 30000, 100_000, pid, pid, start, "app"
	b.Dev, b.Sector, b.Offset, b.Size, b.Bytes, b.Stack = event.Device{Major: 8}, 2048, 2048*512, 8192, 8192, 3
	ev(b)
	e.ID, e.Op, e.Native, e.Time, e.Duration, e.Size, e.Bytes, e.Stack = 5, event.OpWrite, "write", 40000, 1000, 10, 10, 0
	ev(e)
	fact(event.Fact{Kind: event.FactModule, Time: 50000, End: true, Pid: pid, ProcStart: start, Handle: 0x7f00_0002_8000,
		Name: "/usr/lib/x86_64-linux-gnu/libc.so.6"})
	r.Trailer = event.Trailer{End: 150_000}
	return r
}

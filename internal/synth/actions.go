package synth

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/iotrace/iotrace/event"
)

func (g *gen) nat(linux, windows string) string {
	if g.win {
		return windows
	}
	return linux
}

// use makes th wait until h is open: another thread may pick a handle
// whose open has not completed yet.
func (g *gen) use(th *thread, h *handle) {
	if h.ready > th.busy {
		th.busy = h.ready
	}
}

func (p *proc) allocFD() int32 {
	for fd := int32(3); ; fd++ {
		used := false
		for _, h := range p.handles {
			used = used || h.fd == fd
		}
		for _, h := range p.hidden {
			used = used || h.fd == fd
		}
		if !used {
			return fd
		}
	}
}

// --- open / close ---

type openHow struct {
	create, direct, dir, mkdir bool
	truncated, relative        bool
	fail                       uint32
}

func (g *gen) open(th *thread, f *file, how openHow) *handle {
	p := th.p
	t := g.begin(th)
	op := event.OpOpen
	if how.mkdir {
		op = event.OpMkdir
	}
	e := g.ev(th, op, g.nat("openat", "FileIo/Create"), t)
	e.Duration = g.between(3_000, 40_000)
	e.Path = f.path
	if g.win {
		e.OpenFlags = fileSyncNonAlert | fileNonDirectoryFile
		if how.dir || how.mkdir {
			e.OpenFlags = fileSyncNonAlert | fileDirectoryFile
		}
		e.Mode = shareAll
		e.Disposition = fileOpen
		e.Bytes = fileOpened
		e.Priority = 2
		if how.create {
			e.Disposition = fileOverwriteIf
		}
		if how.mkdir {
			e.Disposition = fileCreate
		}
		if how.create || how.mkdir {
			e.Bytes = fileCreated
			e.Flags |= event.FlagCreated
		}
		e.FileObject = g.fileObject()
	} else {
		if how.mkdir {
			e.Native = "mkdirat"
			e.Mode = 0o755
			e.Flags |= event.FlagCreated
		} else {
			e.OpenFlags = oCloexec
			if how.dir {
				e.OpenFlags |= oDirectory
			}
			if how.create {
				e.OpenFlags |= oWronly | oCreat | oTrunc
				e.Mode = 0o644
				e.Flags |= event.FlagCreated
			}
		}
		if how.relative && p.cwd != "" && strings.HasPrefix(f.path, p.cwd+"/") {
			e.Path = f.path[len(p.cwd)+1:]
		}
		e.Dev, e.Inode = f.dev, f.inode
	}
	if how.direct {
		e.Flags |= event.FlagDirect
		if g.win {
			e.OpenFlags |= fileNoBuffering
		} else {
			e.OpenFlags |= oDirect
		}
	}
	name := f.path
	if how.truncated {
		e.Path = truncateUTF8(e.Path, 255)
		name = truncateUTF8(name, 255)
		e.Flags |= event.FlagTruncated
	}
	if how.fail != 0 {
		g.fail(&e, how.fail)
		e.Flags &^= event.FlagCreated
		e.Dev, e.Inode = event.Device{}, 0
		g.emit(e)
		g.done(th, &e)
		return nil
	}
	h := &handle{f: f, named: true, name: name, dos: f.dos, direct: how.direct}
	if how.truncated {
		h.dos = ""
	}
	end := e.Time + e.Duration
	h.ready = end
	if how.mkdir && !g.win {
		g.emit(e)
		g.done(th, &e)
		return nil
	}
	if g.win {
		h.fo = e.FileObject
	} else {
		h.fd = p.allocFD()
		e.FD = h.fd
	}
	g.emit(e)
	g.done(th, &e)
	if g.win {
		g.fact(event.Fact{Kind: event.FactName, Time: end, Space: event.SpaceFileObject, Pid: p.pid, ProcStart: p.start, Handle: h.fo, Name: name})
		if !f.named {
			// FileIo/FileCreate names the FileKey once per file.
			f.named = true
			g.fact(event.Fact{Kind: event.FactName, Time: end, Space: event.SpaceFileKey, Handle: f.key, Name: name})
		}
	} else {
		g.fact(event.Fact{Kind: event.FactName, Time: end, Space: event.SpaceFD, Pid: p.pid, ProcStart: p.start, Handle: uint64(h.fd), Name: name})
	}
	p.handles = append(p.handles, h)
	return h
}

func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func (g *gen) close(th *thread, h *handle) {
	g.use(th, h)
	p := th.p
	g.removeHandle(p, h)
	if g.win && g.left() >= 2 {
		t := g.begin(th)
		e := g.ev(th, event.OpCleanup, "FileIo/Cleanup", t)
		g.onHandle(&e, h)
		e.Duration = g.between(1_000, 15_000)
		g.emit(e)
		g.done(th, &e)
	}
	t := g.begin(th)
	e := g.ev(th, event.OpClose, g.nat("close", "FileIo/Close"), t)
	g.onHandle(&e, h)
	e.Duration = g.between(500, 8_000)
	g.emit(e)
	g.done(th, &e)
	g.unbind(p, h, e.Time+e.Duration)
}

func (g *gen) unbind(p *proc, h *handle, t int64) {
	if !h.named {
		return
	}
	if g.win {
		g.fact(event.Fact{Kind: event.FactName, Time: t, End: true, Space: event.SpaceFileObject, Pid: p.pid, ProcStart: p.start, Handle: h.fo})
	} else {
		g.fact(event.Fact{Kind: event.FactName, Time: t, End: true, Space: event.SpaceFD, Pid: p.pid, ProcStart: p.start, Handle: uint64(h.fd)})
	}
}

// --- read / write ---

type readMode int

const (
	readHit readMode = iota
	readMiss
	readEOF
	readFail
	readInflight
)

var ioSizes = []uint64{512, 4096, 4096, 8192, 16384, 65536, 131072}

func (g *gen) read(th *thread, h *handle, mode readMode) {
	g.use(th, h)
	if h.direct && mode == readHit {
		mode = readMiss
	}
	if mode == readMiss && g.left() < 2 {
		mode = readHit
	}
	t := g.begin(th)
	pread := g.win || g.chance(40) || h.direct
	e := g.ev(th, event.OpRead, g.nat("read", "FileIo/Read"), t)
	if pread && !g.win {
		e.Native = "pread64"
	}
	g.onHandle(&e, h)
	size := ioSizes[g.intn(len(ioSizes))]
	if h.direct {
		size = 4096 * uint64(1+g.intn(16))
	}
	e.Size = size
	if pread {
		e.Offset = h.pos
	}
	if h.f != nil && h.pos >= h.f.size && (mode == readHit || mode == readMiss) {
		mode = readEOF
	}
	var n int64
	if h.f != nil {
		n = min(int64(size), h.f.size-h.pos)
	}
	if g.win {
		e.IOFlags = irpSyncAPI
		e.Priority = 2
	}
	if h.direct {
		e.Flags |= event.FlagDirect
	}
	switch mode {
	case readHit:
		e.Bytes = n
		e.Flags |= event.FlagCacheHit
		e.Duration = 400 + n/4 + g.between(100, 3_000)
		h.pos += n
	case readMiss:
		e.Bytes = n
		g.emitMiss(th, &e, h, n)
		h.pos += n
		return
	case readEOF:
		e.Bytes = 0
		if g.win {
			e.Code = ntEndOfFile
			e.Status = event.StatusEOF
		}
		e.Duration = g.between(300, 2_000)
	case readFail:
		g.fail(&e, g.failCode(eIntr, ntDeviceError))
		e.Duration = g.between(1_000, 200_000)
	case readInflight:
		e.Flags |= event.FlagNoCompletion
		e.Status = event.StatusUnknown
		e.Bytes = -1
		g.noCompletion++
	}
	g.emit(e)
	g.done(th, &e)
}

func (g *gen) failCode(linux, windows uint32) uint32 {
	if g.win {
		return windows
	}
	return linux
}

// emitMiss emits read e (already set up) and the block reads it caused.
func (g *gen) emitMiss(th *thread, e *event.Event, h *handle, n int64) {
	k := 1 + g.intn(3)
	if g.inTour {
		k = 2
	}
	if k > g.left()-1 {
		k = g.left() - 1
	}
	ra := k >= 2 && !h.direct && (g.inTour || g.chance(50))
	chunk := uint64(max(n, 1)+int64(k)-1) / uint64(k)
	chunk = (chunk + 4095) &^ 4095
	blocks := make([]event.Event, 0, k)
	sector := h.f.sector + uint64(h.pos/512)
	end := e.Time
	for i := 0; i < k; i++ {
		b := g.block(th, event.OpBlockRead, e.Time+2_000+int64(i)*700, h.f.disk, sector, chunk)
		sector += chunk / 512
		b.Cause = e.ID
		if g.win {
			b.FileKey = h.f.key
			if h.direct {
				b.IOFlags = irpNoCache | irpRead
			} else {
				b.Flags |= event.FlagPaging
			}
		} else {
			b.IOFlags |= reqSync
			b.Flags |= event.FlagSync
		}
		if h.direct {
			b.Flags |= event.FlagDirect
		}
		if ra && i == k-1 {
			b.Flags |= event.FlagReadahead
			b.Flags &^= event.FlagSync
			b.Size, b.Bytes = 131072, 131072
			if !g.win {
				b.IOFlags = reqOpRead | reqRahead
			}
		}
		if g.o.Resolved {
			b.Path = g.resolvedPath(h)
		}
		e.CausedIOs++
		e.CausedBytes += b.Size
		end = max(end, b.Time+b.Duration)
		blocks = append(blocks, b)
	}
	e.Duration = end - e.Time + g.between(1_000, 6_000)
	g.emit(*e)
	g.done(th, e)
	for _, b := range blocks {
		g.emit(b)
	}
}

// block returns a block I/O issued by th at t.
func (g *gen) block(th *thread, op event.Op, t int64, dev event.Device, sector, size uint64) event.Event {
	var native string
	var opf uint32
	switch op {
	case event.OpBlockRead:
		native, opf = g.nat("REQ_OP_READ", "DiskIo/Read"), reqOpRead
	case event.OpBlockWrite:
		native, opf = g.nat("REQ_OP_WRITE", "DiskIo/Write"), reqOpWrite
	case event.OpBlockFlush:
		native, opf = g.nat("REQ_OP_FLUSH", "DiskIo/FlushBuffers"), reqOpFlush|reqPreflush
	case event.OpBlockDiscard:
		native, opf = "REQ_OP_DISCARD", reqOpDiscard
	}
	e := g.ev(th, op, native, t)
	e.Dev, e.Sector, e.Size, e.Bytes = dev, sector, size, int64(size)
	e.Request = g.request()
	e.Priority = 2
	if g.win {
		switch op {
		case event.OpBlockRead:
			e.IOFlags = irpNoCache | irpPagingIO | irpSyncPaging | irpRead
		case event.OpBlockWrite:
			e.IOFlags = irpNoCache | irpPagingIO | irpWrite
		}
		e.Duration = g.between(60_000, 5_000_000)
	} else {
		e.IOFlags = opf
		e.Wait = g.between(2_000, 80_000)
		e.Duration = e.Wait + g.between(50_000, 3_000_000)
	}
	if op == event.OpBlockFlush {
		e.Sector, e.Size, e.Bytes = 0, 0, 0
		e.Flags |= event.FlagPreflush
	}
	return e
}

type writeMode int

const (
	writePlain writeMode = iota
	writeAppend
	writeFail
)

func (g *gen) write(th *thread, h *handle, mode writeMode) {
	g.use(th, h)
	t := g.begin(th)
	e := g.ev(th, event.OpWrite, g.nat("write", "FileIo/Write"), t)
	g.onHandle(&e, h)
	size := ioSizes[g.intn(len(ioSizes))] - uint64(g.intn(300))
	if h.direct {
		size = 4096 * uint64(1+g.intn(4))
	}
	e.Size = size
	if g.win {
		e.Offset = h.pos
		e.IOFlags = irpSyncAPI
		e.Priority = 2
	} else if g.chance(30) || h.direct {
		e.Native = "pwrite64"
		e.Offset = h.pos
	}
	switch mode {
	case writeAppend:
		e.Flags |= event.FlagAppend
		if h.f != nil {
			h.pos = h.f.size
		}
	case writeFail:
		g.fail(&e, g.failCode(eNospc, ntDiskFull))
		e.Duration = g.between(2_000, 30_000)
		g.emit(e)
		g.done(th, &e)
		return
	}
	e.Bytes = int64(size)
	e.Duration = 600 + int64(size)/3 + g.between(200, 5_000)
	if h.direct && g.left() >= 2 && h.f != nil {
		e.Flags |= event.FlagDirect
		b := g.block(th, event.OpBlockWrite, t+1_500, h.f.disk, h.f.sector+uint64(h.pos/512), size)
		b.Cause = e.ID
		b.Flags |= event.FlagDirect | event.FlagSync
		if g.win {
			b.FileKey = h.f.key
			b.IOFlags = irpNoCache | irpWrite
		} else {
			b.IOFlags |= reqSync
		}
		if g.o.Resolved {
			b.Path = g.resolvedPath(h)
		}
		e.CausedIOs, e.CausedBytes = 1, size
		e.Duration = b.Time + b.Duration - t + g.between(1_000, 4_000)
		g.emit(e)
		g.done(th, &e)
		g.emit(b)
	} else {
		g.emit(e)
		g.done(th, &e)
	}
	h.pos += int64(size)
	if h.f != nil && h.pos > h.f.size {
		h.f.size = h.pos
	}
}

// --- flush, stat, setinfo ---

func (g *gen) fsync(th *thread, h *handle) {
	g.use(th, h)
	t := g.begin(th)
	e := g.ev(th, event.OpFlush, g.nat("fsync", "FileIo/Flush"), t)
	if !g.win && g.chance(30) {
		e.Native = "fdatasync"
	}
	g.onHandle(&e, h)
	if g.left() < 4 || h.f == nil {
		e.Duration = g.between(1_000, 10_000) // nothing dirty
		g.emit(e)
		g.done(th, &e)
		return
	}
	var bs []event.Event
	end := t
	k := 1 + g.intn(2)
	for i := 0; i < k; i++ {
		b := g.block(th, event.OpBlockWrite, t+3_000+int64(i)*900, h.f.disk, h.f.sector+uint64(8*i), 4096*uint64(1+g.intn(8)))
		b.Flags |= event.FlagSync
		if g.win {
			b.FileKey = h.f.key
			b.Flags |= event.FlagPaging
		} else {
			b.IOFlags |= reqSync
		}
		if g.o.Resolved {
			b.Path = g.resolvedPath(h)
		}
		bs = append(bs, b)
		end = max(end, b.Time+b.Duration)
	}
	if !g.win && g.left() >= 2+k+1 {
		// The journal commit, issued by jbd2 on behalf of the fsync.
		jt := g.thread(g.journal)
		j := g.block(jt, event.OpBlockWrite, end+1_000, h.f.disk, 1_000_000+uint64(g.intn(10_000)), 8192)
		j.Flags |= event.FlagMeta | event.FlagSync | event.FlagFUA | event.FlagPreflush
		j.IOFlags |= reqMeta | reqSync | reqFUA | reqPreflush
		bs = append(bs, j)
		end = max(end, j.Time+j.Duration)
	}
	fl := g.block(th, event.OpBlockFlush, end+500, h.f.disk, 0, 0)
	bs = append(bs, fl)
	end = fl.Time + fl.Duration
	for i := range bs {
		bs[i].Cause = e.ID
		e.CausedIOs++
		e.CausedBytes += bs[i].Size
	}
	e.Duration = end - t + g.between(1_000, 5_000)
	g.emit(e)
	g.done(th, &e)
	for _, b := range bs {
		g.emit(b)
	}
}

func (g *gen) statPath(th *thread, f *file, fail uint32) {
	t := g.begin(th)
	e := g.ev(th, event.OpStat, "newfstatat", t)
	if g.chance(30) {
		e.Native = "statx"
	}
	e.Path = f.path
	if fail == 0 {
		e.Dev, e.Inode = f.dev, f.inode
	}
	e.Duration = g.between(800, 15_000)
	if fail != 0 {
		g.fail(&e, fail)
	}
	g.emit(e)
	g.done(th, &e)
}

func (g *gen) statHandle(th *thread, h *handle) {
	g.use(th, h)
	t := g.begin(th)
	e := g.ev(th, event.OpStat, g.nat("fstat", "FileIo/QueryInfo"), t)
	g.onHandle(&e, h)
	if g.win {
		e.Info = []uint32{infoStandard, infoAllInformation, infoNetworkOpen, infoBasic}[g.intn(4)]
	}
	e.Duration = g.between(500, 6_000)
	g.emit(e)
	g.done(th, &e)
}

func (g *gen) setInfo(th *thread, h *handle) {
	g.use(th, h)
	t := g.begin(th)
	e := g.ev(th, event.OpSetInfo, g.nat("ftruncate", "FileIo/SetInfo"), t)
	g.onHandle(&e, h)
	newLen := int64(0)
	if h.f != nil {
		newLen = h.f.size / 2
		h.f.size = newLen
	}
	e.Offset = newLen
	if g.win {
		e.Info = infoEndOfFile
	} else if g.chance(30) {
		e.Native = "fallocate"
		e.Offset, e.Size = newLen, 1<<20
	}
	e.Duration = g.between(2_000, 60_000)
	g.emit(e)
	g.done(th, &e)
}

// --- temp files: create, rename, delete ---

func (g *gen) tempName(th *thread) (linux, dos string) {
	g.ntemp++
	if g.win {
		return "", fmt.Sprintf(`C:\Windows\Temp\_CL_%08x%d.tmp`, th.p.pid*7919, g.ntemp)
	}
	return fmt.Sprintf("/home/dev/proj/build/cc%06X%d.o.tmp", th.p.pid*7919, g.ntemp), ""
}

func (g *gen) newTemp(th *thread) *file {
	lp, dp := g.tempName(th)
	var f *file
	if g.win {
		f = g.winFile(dp, 0, false)
	} else {
		f = g.newFile(lp, "", g.parts[1], g.disks[1], 0, false)
	}
	g.temps = append(g.temps, f)
	return f
}

// createTemp creates a temporary file and writes to it (2 events); the
// handle stays open.
func (g *gen) createTemp(th *thread) *handle {
	if g.left() < 2 {
		return nil
	}
	f := g.newTemp(th)
	h := g.open(th, f, openHow{create: true})
	g.write(th, h, writePlain)
	return h
}

// tempHandle returns an open handle of th's process to a temp file.
func (g *gen) tempHandle(p *proc) *handle {
	for _, h := range p.handles {
		for _, f := range g.temps {
			if h.f == f && !f.deleted {
				return h
			}
		}
	}
	return nil
}

func (g *gen) rename(th *thread) {
	var f *file
	var h *handle
	if g.win {
		h = g.tempHandle(th.p)
		if h == nil {
			g.single(th)
			return
		}
		f = h.f
	} else {
		for _, x := range g.temps {
			if !x.deleted && strings.HasSuffix(x.path, ".tmp") {
				f = x
			}
		}
		if f == nil {
			g.single(th)
			return
		}
	}
	if h != nil {
		g.use(th, h)
	}
	t := g.begin(th)
	e := g.ev(th, event.OpRename, g.nat("renameat2", "FileIo/Rename"), t)
	newPath := strings.TrimSuffix(f.path, ".tmp")
	if g.win {
		newPath = strings.TrimSuffix(f.path, ".tmp") + ".obj"
		g.onHandle(&e, h)
		e.Info = infoRename
	} else {
		e.Path = f.path
	}
	e.Path2 = newPath
	e.Duration = g.between(5_000, 80_000)
	g.emit(e)
	g.done(th, &e)
	f.path = newPath
	if f.dos != "" {
		f.dos = strings.TrimSuffix(f.dos, ".tmp") + ".obj"
	}
	if g.win {
		// FileIo/FileCreate-style rename record: the FileKey's new name.
		g.fact(event.Fact{Kind: event.FactName, Time: e.Time + e.Duration, Space: event.SpaceFileKey, Handle: f.key, Name: newPath})
	}
}

func (g *gen) delete(th *thread, fail bool) {
	var f *file
	var h *handle
	if g.win {
		h = g.tempHandle(th.p)
		if h == nil {
			g.single(th)
			return
		}
		f = h.f
	} else {
		for _, x := range g.temps {
			if !x.deleted {
				f = x
				break
			}
		}
		if f == nil {
			fail = true
			f = &file{path: "/home/dev/proj/build/stale.o"}
		}
	}
	if h != nil {
		g.use(th, h)
	}
	t := g.begin(th)
	e := g.ev(th, event.OpDelete, g.nat("unlinkat", "FileIo/Delete"), t)
	if g.win {
		g.onHandle(&e, h)
		e.Info = infoDisposition
	} else {
		e.Path = f.path
	}
	e.Duration = g.between(4_000, 60_000)
	if fail {
		g.fail(&e, g.failCode(eNoent, ntAccessDenied))
	}
	g.emit(e)
	g.done(th, &e)
	if fail {
		return
	}
	f.deleted = true
	if g.win {
		// FileIo/FileDelete ends the FileKey's name.
		g.fact(event.Fact{Kind: event.FactName, Time: e.Time + e.Duration, End: true, Space: event.SpaceFileKey, Handle: f.key})
	}
}

// --- directories ---

func (g *gen) readDir(th *thread) bool {
	need := 4
	if g.win {
		need = 5
	}
	if g.left() < need {
		return false
	}
	d := g.dirs[g.intn(len(g.dirs))]
	h := g.open(th, d, openHow{dir: true})
	for i := 0; i < 2; i++ {
		t := g.begin(th)
		e := g.ev(th, event.OpReadDir, g.nat("getdents64", "FileIo/DirEnum"), t)
		g.onHandle(&e, h)
		e.Size = 32768
		e.Bytes = int64(600 + g.intn(3000))
		if g.win {
			e.Info = infoIDBothDirectory
			e.Note = "*"
		}
		if i == 1 {
			e.Bytes = 0
			if g.win {
				e.Code = ntNoMoreFiles
				e.Status = event.StatusEOF
			}
		}
		e.Duration = g.between(2_000, 40_000)
		g.emit(e)
		g.done(th, &e)
	}
	g.close(th, h)
	return true
}

func (g *gen) mkdir(th *thread, fail bool) {
	name := fmt.Sprintf("obj-%d", g.intn(1000))
	var f *file
	if g.win {
		f = g.winFile(`D:\src\proj\build\`+name, 0, true)
	} else {
		f = g.newFile("/home/dev/proj/build/"+name, "", g.parts[1], g.disks[1], 4096, true)
	}
	how := openHow{mkdir: true}
	if fail {
		how.fail = g.failCode(eExist, ntNameCollision)
	}
	g.open(th, f, how)
}

func (g *gen) notify(th *thread) bool {
	d := g.dirs[g.intn(len(g.dirs))]
	if g.win {
		if g.left() < 2 {
			return false
		}
		h := g.open(th, d, openHow{dir: true})
		t := g.begin(th)
		e := g.ev(th, event.OpNotify, "FileIo/DirNotify", t)
		g.onHandle(&e, h)
		e.Info = notifyChangeFileName | notifyChangeLastWrite
		e.Size = 4096
		e.Duration = g.between(10_000, 2_000_000)
		e.Bytes = int64(64 + g.intn(200))
		g.emit(e)
		g.done(th, &e)
		return true
	}
	t := g.begin(th)
	e := g.ev(th, event.OpNotify, "inotify_add_watch", t)
	e.Path = d.path
	e.Info = linuxInModifyCreate
	e.Duration = g.between(2_000, 20_000)
	g.emit(e)
	g.done(th, &e)
	return true
}

// --- mmap and page faults ---

func (g *gen) mmap(th *thread, h *handle) {
	if g.win && h.f.deleted {
		// A section of a file pending deletion cannot be created.
		g.statHandle(th, h)
		return
	}
	g.use(th, h)
	t := g.begin(th)
	e := g.ev(th, event.OpMmap, g.nat("mmap", "FileIo/MapFile"), t)
	if g.win {
		// MapFile names the file by FileKey only.
		e.Request = 0
		e.FileKey = h.f.key
		h.f.keyUsed = true
		if g.o.Resolved {
			e.Path = g.resolvedPath(h)
		}
	} else {
		g.onHandle(&e, h)
		e.Info = linuxProtRead
	}
	e.Offset = 0
	e.Size = uint64(h.f.size+4095) &^ 4095
	e.Duration = g.between(2_000, 20_000)
	g.emit(e)
	g.done(th, &e)
	if g.left() == 0 || !g.inTour && !g.chance(60) {
		return
	}
	// A hard page fault on the mapping: paging read, caused by no call.
	b := g.block(th, event.OpBlockRead, e.Time+e.Duration+g.between(1_000, 100_000), h.f.disk, h.f.sector, 4096*uint64(1+g.intn(8)))
	b.Flags |= event.FlagPaging
	if g.win {
		b.FileKey = h.f.key
	}
	if g.o.Resolved {
		b.Path = g.resolvedPath(h)
	}
	g.emit(b)
	th.busy = b.Time + b.Duration
}

// --- Linux-only calls ---

func (g *gen) seek(th *thread, h *handle) {
	g.use(th, h)
	t := g.begin(th)
	e := g.ev(th, event.OpSeek, "lseek", t)
	g.onHandle(&e, h)
	h.pos = int64(g.intn(int(max(h.f.size, 1))))
	e.Offset = h.pos
	e.Info = linuxSeekSet
	e.Bytes = h.pos
	e.Duration = g.between(200, 1_500)
	g.emit(e)
	g.done(th, &e)
}

// metaCalls makes one call of each Linux metadata, link, xattr, advice
// and lock op: path calls on h's file, advice and lock on h.
func (g *gen) metaCalls(th *thread, h *handle) {
	if g.o.MaxOp != 0 && event.OpReadlink >= g.o.MaxOp {
		return
	}
	f := h.f
	for _, c := range []struct {
		op     event.Op
		native string
	}{
		{event.OpReadlink, "readlinkat"}, {event.OpAccess, "faccessat"}, {event.OpSetAttr, "fchmodat"},
		{event.OpLink, "symlinkat"}, {event.OpMknod, "mknodat"}, {event.OpXattr, "lgetxattr"},
		{event.OpAdvise, "fadvise64"}, {event.OpLock, "flock"},
	} {
		if g.left() == 0 {
			return
		}
		if c.op == event.OpAdvise || c.op == event.OpLock {
			g.use(th, h)
		}
		t := g.begin(th)
		e := g.ev(th, c.op, c.native, t)
		e.Duration = g.between(500, 8_000)
		switch c.op {
		case event.OpAdvise, event.OpLock:
			g.onHandle(&e, h)
			e.Info = 2 // POSIX_FADV_SEQUENTIAL, LOCK_EX
		case event.OpLink:
			e.Path = f.path + ".lnk"
			e.Path2 = f.path
		case event.OpXattr:
			e.Path = f.path
			e.Note = "user.mime_type"
			e.Code = 61 // ENODATA
			e.Status = event.FromErrno(e.Code)
		default:
			e.Path = f.path
		}
		if c.op == event.OpSetAttr || c.op == event.OpMknod {
			e.Mode = 0o644
		}
		g.emit(e)
		g.done(th, &e)
	}
}

func (g *gen) dup(th *thread, h *handle) {
	g.use(th, h)
	p := th.p
	t := g.begin(th)
	e := g.ev(th, event.OpDup, "dup", t)
	g.onHandle(&e, h)
	nh := &handle{fd: p.allocFD(), f: h.f, pos: h.pos, named: h.named, name: h.name}
	e.Info = uint32(nh.fd)
	e.Duration = g.between(300, 2_000)
	nh.ready = t + e.Duration
	g.emit(e)
	g.done(th, &e)
	p.handles = append(p.handles, nh)
	if nh.named {
		g.fact(event.Fact{Kind: event.FactName, Time: e.Time + e.Duration, Space: event.SpaceFD, Pid: p.pid, ProcStart: p.start, Handle: uint64(nh.fd), Name: h.name})
	}
}

func (g *gen) chdir(th *thread, d *file, fail bool) {
	p := th.p
	t := g.begin(th)
	e := g.ev(th, event.OpChdir, "chdir", t)
	e.Path = d.path
	e.Duration = g.between(1_000, 8_000)
	if fail {
		e.Path = d.path + "/main.c"
		g.fail(&e, eNotdir)
	}
	g.emit(e)
	g.done(th, &e)
	if !fail {
		p.cwd = d.path
		g.fact(event.Fact{Kind: event.FactName, Time: e.Time + e.Duration, Space: event.SpaceCwd, Pid: p.pid, ProcStart: p.start, Name: d.path})
	}
}

func (g *gen) copyRange(th *thread, src, dst *handle) {
	g.use(th, src)
	t := g.begin(th)
	e := g.ev(th, event.OpCopy, "copy_file_range", t)
	g.onHandle(&e, src)
	e.Info = uint32(dst.fd)
	e.Offset = src.pos
	e.Size = 1 << 20
	e.Bytes = min(int64(e.Size), max(src.f.size-src.pos, 0))
	e.Duration = g.between(5_000, 300_000)
	g.emit(e)
	g.done(th, &e)
}

func (g *gen) async(th *thread, h *handle) {
	g.use(th, h)
	t := g.begin(th)
	e := g.ev(th, event.OpAsync, "io_uring/READV", t)
	g.onHandle(&e, h)
	e.Info = ioringOpReadv
	e.Note = "READV"
	e.Offset = h.pos
	e.Size = 65536
	e.Bytes = min(65536, max(h.f.size-h.pos, 0))
	e.Flags |= event.FlagCacheHit
	e.Duration = g.between(1_000, 30_000)
	g.emit(e)
	g.done(th, &e)
}

func (g *gen) fsctl(th *thread, h *handle) {
	g.use(th, h)
	t := g.begin(th)
	e := g.ev(th, event.OpFSControl, g.nat("ioctl", "FileIo/FSControl"), t)
	g.onHandle(&e, h)
	e.Info = uint32(g.failCode(linuxFSIOCGetFlags, fsctlGetReparsePoint))
	e.Duration = g.between(1_000, 10_000)
	if g.win {
		// Not a reparse point.
		e.Code = 0xC0000275
		e.Status = event.FromNTSTATUS(e.Code)
		e.Bytes = -1
	}
	g.emit(e)
	g.done(th, &e)
}

// trim is fstrim: an FITRIM ioctl that causes discards.
func (g *gen) trim() {
	th := g.thread(g.trimmer)
	d := g.dirs[0]
	t := g.begin(th)
	e := g.ev(th, event.OpFSControl, "ioctl", t)
	e.Path = d.path
	e.Info = linuxFITRIM
	k := min(3, g.left()-1)
	var bs []event.Event
	end := t
	for i := 0; i < k; i++ {
		b := g.block(th, event.OpBlockDiscard, t+5_000+int64(i)*2_000, d.disk, 50_000_000+uint64(i)*2_097_152, 1<<30)
		b.Flags |= event.FlagDiscard
		b.Cause = e.ID
		e.CausedIOs++
		e.CausedBytes += b.Size
		end = max(end, b.Time+b.Duration)
		bs = append(bs, b)
	}
	e.Bytes = int64(e.CausedBytes)
	e.Duration = end - t + 10_000
	g.emit(e)
	g.done(th, &e)
	for _, b := range bs {
		g.emit(b)
	}
}

// --- background block I/O ---

// writeback is the flusher writing dirty pages of f.
func (g *gen) writeback(f *file) {
	if g.win && (!f.named || f.deleted) {
		// The lazy writer writes files whose FileKey is named.
		f = g.pretrace[g.intn(len(g.pretrace))]
	}
	th := g.thread(g.flusher)
	t := g.begin(th)
	k := min(1+g.intn(3), g.left())
	for i := 0; i < k; i++ {
		b := g.block(th, event.OpBlockWrite, t+int64(i)*400, f.disk, f.sector+uint64(i*256), 4096*uint64(1+g.intn(32)))
		b.Flags |= event.FlagWriteback
		if g.win {
			b.Flags |= event.FlagPaging
			b.FileKey = f.key
			f.keyUsed = true
			if g.o.Resolved {
				b.Path = f.display()
			}
		} else {
			b.Inode = f.inode
		}
		g.emit(b)
		th.busy = b.Time + b.Duration
	}
}

// idleCompletion is a block completion seen on CPU cpu's idle thread
// whose submission was never seen.
func (g *gen) idleCompletion(cpu uint32) {
	idle := &proc{comm: fmt.Sprintf("swapper/%d", cpu)}
	if g.win {
		idle.comm = "Idle"
	}
	th := &thread{p: idle, cpu: cpu}
	t := g.begin(th)
	b := g.block(th, event.OpBlockWrite, t, g.disks[0], 123_456+uint64(cpu)*64, 4096)
	b.Flags |= event.FlagNoStart
	b.CPU = cpu
	b.Duration, b.Wait = 0, 0
	g.noStart++
	g.emit(b)
}

// failedBlock is a block read that failed with an I/O error.
func (g *gen) failedBlock(th *thread, h *handle) {
	g.use(th, h)
	if g.win || g.left() < 2 {
		g.read(th, h, readFail)
		return
	}
	t := g.begin(th)
	e := g.ev(th, event.OpRead, "pread64", t)
	g.onHandle(&e, h)
	e.Offset, e.Size = h.pos, 4096
	b := g.block(th, event.OpBlockRead, t+2_000, h.f.disk, h.f.sector+uint64(h.pos/512), 4096)
	b.Cause = e.ID
	b.Status, b.Code, b.Bytes = event.StatusIOError, eIO, 0
	e.CausedIOs, e.CausedBytes = 1, 4096
	g.fail(&e, eIO)
	e.Duration = b.Time + b.Duration - t + 3_000
	g.emit(e)
	g.done(th, &e)
	g.emit(b)
}

// --- markers, loss ---

func (g *gen) marker(msg string) {
	th := g.parent.threads[0]
	t := g.begin(th)
	e := g.ev(th, event.OpMarker, "mark", t)
	e.Request = 0
	e.Note = msg
	e.Bytes = -1
	g.emit(e)
}

// lose skips event IDs: events lost by the kernel or dropped by iotrace.
func (g *gen) lose(lost, dropped uint64) {
	g.nextID += lost + dropped
	g.lost += lost
	g.dropped += dropped
}

// --- processes ---

// spawn starts a worker as a child of the parent (Linux: fork + execve,
// one event; Windows: Process/Start, no event). reuse, when non-zero, is
// the pid to give it.
func (g *gen) spawn(reuse uint32) *proc {
	pt := g.parent.threads[0]
	t := g.begin(pt)
	pid := reuse
	if pid == 0 {
		pid = g.pid()
	}
	src := linuxSources[g.intn(len(linuxSources))]
	var p *proc
	if g.win {
		p = g.newProc(pid, g.parent.pid, t, "cl.exe",
			`C:\Program Files\Microsoft Visual Studio\2022\Community\VC\Tools\MSVC\14.40.33807\bin\Hostx64\x64\cl.exe`,
			`cl.exe /c /O2 src\`+src)
		g.newThread(p, g.tid())
		g.procFacts(p, t, false)
		g.workers = append(g.workers, p)
		return p
	}
	// fork: a copy of make, with make's stdio and cwd.
	p = g.newProc(pid, g.parent.pid, t, g.parent.comm, g.parent.image, g.parent.cmdline)
	g.newThread(p, pid)
	p.cwd = g.parent.cwd
	g.procFacts(p, t, false)
	g.fact(event.Fact{Kind: event.FactName, Time: t, Space: event.SpaceCwd, Pid: p.pid, ProcStart: p.start, Name: p.cwd})
	for fd := 0; fd < 3; fd++ {
		g.fact(event.Fact{Kind: event.FactName, Time: t, Space: event.SpaceFD, Pid: p.pid, ProcStart: p.start, Handle: uint64(fd), Name: "/dev/pts/0"})
	}
	th := p.threads[0]
	th.busy = t + g.between(20_000, 100_000)
	et := g.begin(th)
	e := g.ev(th, event.OpExec, "execve", et)
	p.image = "/usr/libexec/gcc/x86_64-linux-gnu/12/cc1"
	p.comm = "cc1"
	p.cmdline = p.image + " -quiet src/" + src + " -O2"
	e.Path = p.image
	e.Duration = g.between(100_000, 400_000)
	e.Bytes = -1
	g.emit(e)
	g.done(th, &e)
	// exec changes comm, image and command line of the same process.
	g.fact(event.Fact{Kind: event.FactProcess, Time: et + e.Duration, Pid: p.pid, ProcStart: p.start,
		PPid: p.ppid, Name: p.comm, Image: p.image, Detail: p.cmdline})
	g.workers = append(g.workers, p)
	return p
}

// exit ends worker p: its handles close, its threads and itself end.
func (g *gen) exit(p *proc) {
	th := p.threads[0]
	t := g.begin(th)
	for _, h := range p.handles {
		g.unbind(p, h, t)
	}
	p.handles = nil
	if !g.win {
		for fd := 0; fd < 3; fd++ {
			g.fact(event.Fact{Kind: event.FactName, Time: t, End: true, Space: event.SpaceFD, Pid: p.pid, ProcStart: p.start, Handle: uint64(fd)})
		}
		g.fact(event.Fact{Kind: event.FactName, Time: t, End: true, Space: event.SpaceCwd, Pid: p.pid, ProcStart: p.start})
	}
	for _, x := range p.threads {
		g.fact(event.Fact{Kind: event.FactThread, Time: t, End: true, Pid: p.pid, ProcStart: p.start, Tid: x.tid})
	}
	g.fact(event.Fact{Kind: event.FactProcess, Time: t, End: true, Pid: p.pid, ProcStart: p.start})
	p.exited = true
	for i, w := range g.workers {
		if w == p {
			g.workers = append(g.workers[:i], g.workers[i+1:]...)
			break
		}
	}
	g.exited = append(g.exited, p.pid)
}

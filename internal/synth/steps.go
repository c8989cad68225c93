package synth

import "slices"

// single emits exactly one event for th: a stat by path (Linux) or a
// query on an open handle, else an open (Windows).
func (g *gen) single(th *thread) {
	if g.left() == 0 {
		return
	}
	if !g.win {
		g.statPath(th, g.files[g.intn(len(g.files))], 0)
		return
	}
	if h := g.regular(th.p); h != nil {
		g.statHandle(th, h)
		return
	}
	g.open(th, g.files[g.intn(len(g.files))], openHow{})
}

// handleFor returns an open regular-file handle of th's process, opening
// one (one event) when it has none. It returns nil when the budget is
// spent.
func (g *gen) handleFor(th *thread) *handle {
	if h := g.regular(th.p); h != nil {
		return h
	}
	if g.left() == 0 {
		return nil
	}
	return g.open(th, g.files[g.intn(len(g.files))], openHow{relative: g.chance(30)})
}

// tour is the opening of every trace: every op, layer and feature once,
// in a fixed order, as far as the event budget goes: its steps, in
// groups.
func (g *gen) tour() {
	w0 := g.workers[0]
	if len(g.workers) < 2 {
		// w0 exits half-way through the tour: start a second worker.
		g.spawn(0)
	}
	// tw is a second worker that outlives the tour.
	ts := &tourState{th: w0.threads[0], tw: g.workers[1].threads[0], w0: w0}
	steps := slices.Concat(g.tourReads(ts), g.tourChanges(ts), g.tourLinuxCalls(ts), g.tourLifecycle(ts), g.tourEdges(ts))
	g.inTour = true
	defer func() { g.inTour = false }()
	for _, s := range steps {
		if g.left() == 0 || g.err != nil {
			return
		}
		s()
	}
}

// tourState is what the tour's steps share: the first worker's thread
// (th) and process (w0), the second worker's thread (tw), the handle of
// the last file opened (h) and of the first (h0).
type tourState struct {
	th, tw *thread
	w0     *proc
	h, h0  *handle
}

// tourReads: the first file opened, read (hit, miss, failure, end of file), queried and sought; opens and stats that fail.
func (g *gen) tourReads(ts *tourState) []func() {
	return []func(){
		func() { g.marker("phase 1: compile ✓ — ünïcødé marker") },
		func() { ts.h = g.open(ts.th, g.files[0], openHow{relative: true}); ts.h0 = ts.h },
		func() { g.read(ts.th, ts.h, readHit) },
		func() { ts.h.pos = 0; g.read(ts.th, ts.h, readMiss) },
		func() { g.read(ts.th, ts.h, readFail) },
		func() { g.statHandle(ts.th, ts.h) },
		func() { g.seekOr(ts.th, ts.h) },
		func() { ts.h.pos = 0; g.read(ts.th, ts.h, readMiss) },
		func() { ts.h.pos = ts.h.f.size; g.read(ts.th, ts.h, readEOF) },
		func() { g.open(ts.th, g.missing(), openHow{fail: g.failCode(eNoent, ntNameNotFound)}) },
		func() { g.open(ts.th, g.files[1], openHow{fail: g.failCode(eAcces, ntSharingViolation)}) },
		func() {
			if g.win {
				g.open(ts.th, g.files[2], openHow{fail: ntAccessDenied})
			} else {
				g.statPath(ts.th, g.missing(), eNoent)
			}
		},
		func() {
			if !g.win {
				g.statPath(ts.th, g.files[2], 0)
			}
		},
	}
}

// tourChanges: a temporary file written, resized and flushed; renames, deletes, directories, a mapping, change notification.
func (g *gen) tourChanges(ts *tourState) []func() {
	return []func(){
		func() { ts.h = g.createTemp(ts.th) },
		func() {
			if ts.h != nil {
				g.write(ts.th, ts.h, writeAppend)
			}
		},
		func() {
			if ts.h != nil {
				g.write(ts.th, ts.h, writeFail)
			}
		},
		func() {
			if ts.h != nil {
				g.setInfo(ts.th, ts.h)
			}
		},
		func() {
			if ts.h != nil {
				g.fsync(ts.th, ts.h)
			}
		},
		func() { g.rename(ts.th) },
		func() { g.delete(ts.th, false) },
		func() {
			if !g.win {
				g.delete(ts.th, true)
			}
		},
		func() { g.readDir(ts.th) },
		func() { g.mkdir(ts.th, false) },
		func() { g.mkdir(ts.th, true) },
		func() {
			g.mmap(ts.th, ts.h0)
		},
		func() { g.notify(ts.th) },
	}
}

// tourLinuxCalls: file-system controls and metadata calls, dups, chdirs, asynchronous requests, a copy between files (Linux).
func (g *gen) tourLinuxCalls(ts *tourState) []func() {
	return []func(){
		func() {
			if x := g.handleFor(ts.th); x != nil {
				g.fsctl(ts.th, x)
				if !g.win {
					g.metaCalls(ts.th, x)
				}
			}
		},
		func() {
			if !g.win {
				if x := g.handleFor(ts.th); x != nil {
					g.dup(ts.th, x)
				}
			}
		},
		func() {
			if !g.win {
				g.chdir(ts.th, g.dirs[1], false)
			}
		},
		func() {
			if !g.win {
				g.chdir(ts.th, g.dirs[1], true)
			}
		},
		func() {
			if !g.win {
				if x := g.handleFor(ts.th); x != nil {
					g.async(ts.th, x)
				}
			}
		},
		func() {
			if g.win {
				return
			}
			src := g.handleFor(ts.th)
			if dst := g.tempHandle(ts.th.p); src != nil && dst != nil && g.left() > 0 {
				g.copyRange(ts.th, src, dst)
			} else if g.left() > 0 {
				if t := g.createTemp(ts.th); t != nil && src != nil && g.left() > 0 {
					g.copyRange(ts.th, src, t)
				}
			}
		},
	}
}

// tourLifecycle: a hidden file read, a pid reused, writeback, a trim, completions on idle processors.
func (g *gen) tourLifecycle(ts *tourState) []func() {
	return []func(){
		func() { g.read(ts.th, ts.w0.hidden[0], readHit) },
		func() {
			// pid reuse: the first worker exits, a new process gets its pid.
			if !ts.w0.exited {
				pid := ts.w0.pid
				g.exit(ts.w0)
				p := g.spawn(pid)
				if g.left() > 0 {
					g.open(p.threads[0], g.files[3], openHow{})
				}
			}
		},
		func() { g.writeback(g.files[4]) },
		func() {
			if !g.win {
				g.trim()
			}
		},
		func() { g.idleCompletion(0) },
		func() { g.idleCompletion(g.o.CPUs - 1) },
	}
}

// tourEdges: unusual names, a truncated path, losses, a failed block I/O, direct I/O, I/O in flight at the end, a close.
func (g *gen) tourEdges(ts *tourState) []func() {
	return []func(){
		func() {
			t2 := ts.tw
			for _, f := range g.special {
				if g.left() < 2 {
					return
				}
				x := g.open(t2, f, openHow{})
				g.read(t2, x, readHit)
			}
		},
		func() {
			if !g.win {
				g.open(ts.tw, g.special[len(g.special)-1], openHow{truncated: true})
			}
		},
		func() { g.lose(3, 1) },
		func() {
			if x := g.handleFor(ts.tw); x != nil {
				g.failedBlock(ts.tw, x)
			}
		},
		func() {
			t2 := ts.tw
			if g.left() >= 3 {
				x := g.open(t2, g.files[5], openHow{direct: true})
				g.read(t2, x, readMiss)
				g.write(t2, x, writePlain)
			}
		},
		func() {
			if x := g.handleFor(ts.tw); x != nil {
				g.read(ts.tw, x, readInflight)
			}
		},
		func() {
			t2 := ts.tw
			if x := g.regular(t2.p); x != nil {
				g.close(t2, x)
			}
		},
		func() { g.marker("phase 2: link, 日本語 and \"quotes\"\nsecond line") },
	}
}

func (g *gen) seekOr(th *thread, h *handle) {
	if g.win {
		g.statHandle(th, h)
		return
	}
	g.seek(th, h)
}

// missing is a file that does not exist.
func (g *gen) missing() *file {
	if g.win {
		return &file{path: `\Device\HarddiskVolume4\src\proj\include\config.h`, dos: `D:\src\proj\include\config.h`}
	}
	return &file{path: "/home/dev/proj/include/config.h"}
}

type action struct {
	weight int
	fn     func(g *gen, th *thread)
}

// actions are the steady-state mix: a syscall-heavy build.
var actions = []action{
	{40, func(g *gen, th *thread) {
		h := g.handleFor(th)
		if h == nil || g.left() == 0 {
			return
		}
		mode := readHit
		if g.chance(g.o.BlockPercent) {
			mode = readMiss
		}
		g.read(th, h, mode)
	}},
	{14, func(g *gen, th *thread) {
		if h := g.handleFor(th); h != nil && g.left() > 0 {
			g.write(th, h, writePlain)
		}
	}},
	{12, func(g *gen, th *thread) {
		if g.win {
			if h := g.handleFor(th); h != nil && g.left() > 0 {
				g.statHandle(th, h)
			}
			return
		}
		if g.chance(10) {
			g.statPath(th, g.missing(), eNoent)
			return
		}
		g.statPath(th, g.files[g.intn(len(g.files))], 0)
	}},
	{8, func(g *gen, th *thread) {
		if len(th.p.handles) >= 8 {
			g.close(th, th.p.handles[g.intn(len(th.p.handles))])
			return
		}
		g.open(th, g.files[g.intn(len(g.files))], openHow{relative: g.chance(30)})
	}},
	{7, func(g *gen, th *thread) {
		if len(th.p.handles) == 0 {
			g.single(th)
			return
		}
		g.close(th, th.p.handles[g.intn(len(th.p.handles))])
	}},
	{4, func(g *gen, th *thread) {
		if h := g.handleFor(th); h != nil && g.left() > 0 {
			g.seekOr(th, h)
		}
	}},
	{1, func(g *gen, th *thread) {
		if h := g.handleFor(th); h != nil && g.left() > 0 {
			g.fsync(th, h)
		}
	}},
	{1, func(g *gen, th *thread) {
		if h := g.handleFor(th); h != nil && g.left() > 0 {
			g.mmap(th, h)
		}
	}},
	{2, func(g *gen, th *thread) {
		if !g.readDir(th) {
			g.single(th)
		}
	}},
	{1, func(g *gen, th *thread) {
		if g.createTemp(th) == nil {
			g.single(th)
		}
	}},
	{1, func(g *gen, th *thread) { g.rename(th) }},
	{1, func(g *gen, th *thread) { g.delete(th, false) }},
	{1, func(g *gen, th *thread) {
		f := g.files[g.intn(len(g.files))]
		g.writeback(f)
	}},
	{1, func(g *gen, th *thread) {
		if !g.notify(th) {
			g.single(th)
		}
	}},
	{1, func(g *gen, th *thread) {
		if g.win {
			g.single(th)
			return
		}
		if h := g.handleFor(th); h != nil && g.left() > 0 {
			g.async(th, h)
		}
	}},
	{1, func(g *gen, th *thread) {
		// A worker finishes and make starts the next one.
		if len(g.workers) < 2 || !g.chance(20) {
			g.single(th)
			return
		}
		g.exit(th.p)
		p := g.spawn(0)
		if g.left() > 0 {
			g.open(p.threads[0], g.files[g.intn(len(g.files))], openHow{})
		}
	}},
}

var totalWeight = func() int {
	n := 0
	for _, a := range actions {
		n += a.weight
	}
	return n
}()

// step runs one random action of a random worker thread; it emits at
// least one event.
func (g *gen) step() {
	th := g.thread(g.worker())
	before := g.events
	k := g.intn(totalWeight)
	for _, a := range actions {
		if k < a.weight {
			a.fn(g, th)
			break
		}
		k -= a.weight
	}
	if g.events == before && g.left() > 0 && g.err == nil {
		g.single(g.thread(g.worker()))
	}
	if g.chance(1) && g.chance(10) {
		g.lose(uint64(1+g.intn(20)), 0)
	}
}

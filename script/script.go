package script

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/script/where"
	"github.com/iotrace/iotrace/stacks"
	"github.com/iotrace/iotrace/symbolize"
	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// DefaultMaxSteps is the step limit of one handler call (and of the
// script's top level) when Options.MaxSteps is 0: far more than any
// reasonable handler needs, reached in well under a second by a loop that
// never ends.
const DefaultMaxSteps = 10_000_000

// DefaultMaxKeys bounds the keys of one aggregation when Options.MaxKeys
// is 0.
const DefaultMaxKeys = 1 << 20

// maxErrorsShown is how many handler errors --keep-going prints.
const maxErrorsShown = 10

// ErrExit is returned by Event once the script has called exit(): the
// source should stop; it is not a failure.
var ErrExit = errors.New("script called exit()")

// Options configure a script run.
type Options struct {
	// Stdout receives everything the script prints: print, printf, emit
	// and aggregation tables. os.Stdout when nil.
	Stdout io.Writer
	// Stderr receives warnings and, with KeepGoing, handler errors.
	// os.Stderr when nil.
	Stderr io.Writer
	// Where is an extra filter expression (the command line's --where),
	// combined with the script's FILTER by 'and'.
	Where string
	// Args are the script's arguments, visible as the dict args.
	Args map[string]string
	// MaxSteps limits the Starlark steps of one handler call;
	// DefaultMaxSteps when 0.
	MaxSteps uint64
	// MaxKeys limits the keys of one aggregation; DefaultMaxKeys when 0.
	MaxKeys int
	// MaxMemory limits how much the heap may grow while the script runs
	// (its data and aggregations): past it the script stops with an
	// error. DefaultMaxMemory when 0.
	MaxMemory uint64
	// KeepGoing makes a handler error a counted, reported warning instead
	// of the end of the run.
	KeepGoing bool
	// WallClock drives every() timers and now() by the wall clock (live
	// tracing) instead of by event time (recorded traces).
	WallClock bool
	// Stop is called once when the script stops the run early: it
	// called exit() or a handler failed. Live runs pass the cancel
	// function of the tracing context.
	Stop func()
	// Symbols says where the frames of e.stack are named from (the
	// trace's modules' files by build-id: --symbols directories, then
	// /usr/lib/debug, then the modules' own paths).
	Symbols symbolize.Options
}

// Script is a loaded script, ready to receive a trace. It is an
// event.Sink; use it from one goroutine (timers of a WallClock run take
// its lock themselves).
type Script struct {
	opts     Options
	file     string
	maxSteps uint64

	thread  *starlark.Thread
	globals starlark.StringDict
	onEvent *starlark.Function
	onBegin *starlark.Function
	onEnd   *starlark.Function
	timers  []*timer
	aggs    []*Agg
	filter  *where.Filter

	out    *bufio.Writer
	stderr io.Writer

	mu       sync.Mutex // serializes the interpreter (WallClock timers)
	gen      uint64     // bumped after each on_event call
	callArgs [1]starlark.Value
	slab     []eventValue
	clock    int64 // script time, ns from the trace start
	header   event.Header
	trailer  *event.Trailer
	begun    bool
	finished bool
	inTop    bool

	done     atomic.Bool // no more events: exit() or a fatal error
	stopErr  error       // what Event returns once done
	stopOnce sync.Once

	seen, matched atomic.Uint64
	errCount      uint64
	devices       map[event.Device]string
	stacks        *stacks.Table // the trace's stacks, for e.stack
	formats       map[string]*format
	attrCache     attrCache

	quit chan struct{} // stops the WallClock goroutine
	wg   sync.WaitGroup

	mem *memWatch
	// percentiles: the script names percentiles, so its hist_log2
	// aggregations keep sketches for them (usesPercentiles).
	percentiles bool
}

type timer struct {
	every int64 // ns
	next  int64 // next deadline in script time
	fn    starlark.Callable
	pos   string
}

// fileOptions are the Starlark dialect of scripts: Python-like, with while
// loops and top-level control flow; globals may be reassigned at the top
// level (handlers change state through aggregations, dicts and lists).
var fileOptions = &syntax.FileOptions{
	Set:             true,
	While:           true,
	TopLevelControl: true,
	GlobalReassign:  true,
}

// Load compiles the script src (read from filename, used in error
// positions) and runs its top level: aggregations are created, every()
// timers registered and FILTER compiled. Errors point at file:line:col.
func Load(filename string, src []byte, opts Options) (*Script, error) {
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	s := &Script{
		opts:     opts,
		file:     filename,
		maxSteps: opts.MaxSteps,
		out:      bufio.NewWriterSize(opts.Stdout, 64<<10),
		stderr:   opts.Stderr,
		devices:  make(map[event.Device]string),
		formats:  make(map[string]*format),
		stacks:   stacks.New(stacks.Options{Symbols: opts.Symbols}),
	}
	if s.maxSteps == 0 {
		s.maxSteps = DefaultMaxSteps
	}
	if s.opts.MaxKeys <= 0 {
		s.opts.MaxKeys = DefaultMaxKeys
	}
	s.thread = &starlark.Thread{
		Name: filename,
		Print: func(_ *starlark.Thread, msg string) {
			s.out.WriteString(msg)
			s.out.WriteByte('\n')
		},
		Load: func(_ *starlark.Thread, module string) (starlark.StringDict, error) {
			return nil, fmt.Errorf("load(%q) is not available: scripts are self-contained and cannot read files", module)
		},
		OnMaxSteps: func(t *starlark.Thread) {
			t.Cancel(fmt.Sprintf("step limit of %d steps exceeded (an infinite loop?); raise it with --max-steps", s.maxSteps))
		},
	}
	if s.opts.MaxMemory == 0 {
		s.opts.MaxMemory = DefaultMaxMemory
	}
	predeclared := s.builtins()
	for name, b := range s.guardBuiltins() {
		predeclared[name] = b
	}
	prog, pcts, err := compile(filename, src, predeclared)
	if err != nil {
		return nil, loadError(err)
	}
	s.percentiles = pcts
	s.mem = startMemWatch(s.thread, s.opts.MaxMemory)
	s.inTop = true
	s.thread.SetMaxExecutionSteps(s.thread.Steps + s.maxSteps)
	globals, err := prog.Init(s.thread, predeclared)
	s.inTop = false
	s.out.Flush()
	if err != nil {
		s.mem.close()
		if merr := s.mem.err(); merr != nil {
			return nil, merr
		}
		return nil, s.evalError(err, "", nil)
	}
	s.globals = globals
	if err := s.bind(); err != nil {
		return nil, err
	}
	if err := s.compileFilter(src); err != nil {
		return nil, err
	}
	return s, nil
}

// compile parses src, checks the names its code compares enum fields
// with (enumcheck.go), finds whether it asks for percentiles (stats.go),
// rewrites it so that its memory is checked within
// each step (guard.go) and compiles it.
func compile(filename string, src []byte, predeclared starlark.StringDict) (prog *starlark.Program, percentiles bool, err error) {
	f, err := fileOptions.Parse(filename, src, 0)
	if err != nil {
		return nil, false, err
	}
	if err := checkNames(f); err != nil {
		return nil, false, err
	}
	percentiles = usesPercentiles(f)
	guardFile(f)
	prog, err = starlark.FileProgram(f, predeclared.Has)
	return prog, percentiles, err
}

// loadError formats parse and resolve errors as file:line:col: msg.
func loadError(err error) error {
	var el resolve.ErrorList
	if errors.As(err, &el) {
		msgs := make([]string, len(el))
		for i, e := range el {
			msgs[i] = e.Pos.String() + ": " + e.Msg
		}
		return errors.New(strings.Join(msgs, "\n"))
	}
	return err
}

// bind finds the handlers and names the aggregations.
func (s *Script) bind() error {
	handler := func(name string, params int) (*starlark.Function, error) {
		v, ok := s.globals[name]
		if !ok {
			return nil, nil
		}
		fn, ok := v.(*starlark.Function)
		if !ok {
			return nil, fmt.Errorf("%s: %s must be a function (def %s(...)), not a %s", s.file, name, name, v.Type())
		}
		if fn.NumParams() != params && !(fn.NumParams() > params && fn.ParamDefault(params) != nil) {
			return nil, fmt.Errorf("%s: %s takes %d parameter(s), it declares %d", fn.Position(), name, params, fn.NumParams())
		}
		return fn, nil
	}
	var err error
	if s.onEvent, err = handler("on_event", 1); err != nil {
		return err
	}
	if s.onBegin, err = handler("on_begin", 0); err != nil {
		return err
	}
	if s.onEnd, err = handler("on_end", 0); err != nil {
		return err
	}
	if s.onEvent == nil && s.onEnd == nil && len(s.timers) == 0 {
		return fmt.Errorf("%s: the script defines no handler: def on_event(e), def on_end() or every(...)", s.file)
	}
	names := make([]string, 0, len(s.globals))
	for name := range s.globals {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if a, ok := s.globals[name].(*Agg); ok && a.name == "" {
			a.name = name
		}
	}
	return nil
}

// compileFilter compiles FILTER (at its position in the script) and
// Options.Where.
func (s *Script) compileFilter(src []byte) error {
	var fromScript *where.Filter
	if v, ok := s.globals["FILTER"]; ok {
		str, ok := starlark.AsString(v)
		if !ok {
			return fmt.Errorf("%s: FILTER must be a string, not a %s", s.file, v.Type())
		}
		loc := filterPosition(s.file, src)
		f, err := where.Compile(str, loc)
		if err != nil {
			return err
		}
		fromScript = f
	}
	cli, err := where.Compile(s.opts.Where, where.Source{File: "--where"})
	if err != nil {
		return err
	}
	s.filter = where.And(fromScript, cli)
	return nil
}

// filterPosition finds where the FILTER string's text starts in the
// script: the string literal of the last top-level FILTER = "..." .
func filterPosition(file string, src []byte) where.Source {
	loc := where.Source{File: file}
	f, err := fileOptions.Parse(file, src, 0)
	if err != nil {
		return loc
	}
	for _, st := range f.Stmts {
		as, ok := st.(*syntax.AssignStmt)
		if !ok {
			continue
		}
		id, ok := as.LHS.(*syntax.Ident)
		if !ok || id.Name != "FILTER" {
			continue
		}
		lit, ok := as.RHS.(*syntax.Literal)
		if !ok || lit.Token != syntax.STRING {
			continue
		}
		// Skip the prefix and quotes: r"..", '''..''', "..".
		skip := strings.IndexAny(lit.Raw, `"'`)
		if skip < 0 {
			continue
		}
		q := 1
		if strings.HasPrefix(lit.Raw[skip:], `"""`) || strings.HasPrefix(lit.Raw[skip:], `'''`) {
			q = 3
		}
		loc.Line, loc.Col = int(lit.TokenPos.Line), int(lit.TokenPos.Col)+skip+q
	}
	return loc
}

// Filter returns the compiled filter (FILTER and Options.Where together).
func (s *Script) Filter() *where.Filter { return s.filter }

// Pushdown returns the part of the filter a backend can apply itself.
func (s *Script) Pushdown() where.Pushdown { return s.filter.Pushdown() }

// Err returns the error that stopped the run (a *RuntimeError), nil when
// none did or the script called exit(). A live source may end without
// reporting it (a timer failed while no event arrived): check Err after
// the source returns.
func (s *Script) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopErr == nil || errors.Is(s.stopErr, ErrExit) {
		return nil
	}
	return s.stopErr
}

// Errors returns the number of handler errors (counted with KeepGoing).
func (s *Script) Errors() uint64 { return s.errCount }

// Seen returns the number of events received, and Matched those that
// passed the filter.
func (s *Script) Seen() uint64 { return s.seen.Load() }

// Matched returns the number of events that passed the filter.
func (s *Script) Matched() uint64 { return s.matched.Load() }

// Trailer returns the trailer the source ended with, nil before End.
func (s *Script) Trailer() *event.Trailer { return s.trailer }

// Begin implements event.Sink: it calls on_begin and, for a WallClock
// run, starts the timers.
func (s *Script) Begin(h *event.Header) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.header = *h
	s.begun = true
	if s.opts.WallClock && s.header.StartWall == 0 {
		s.header.StartWall = time.Now().UnixNano()
	}
	for _, t := range s.timers {
		t.next = t.every
	}
	if s.onBegin != nil {
		if err := s.call(s.onBegin, nil, nil); err != nil {
			return err
		}
	}
	if s.opts.WallClock {
		s.quit = make(chan struct{})
		s.wg.Add(1)
		go s.wallLoop()
	}
	return s.flushErr()
}

// Fact implements event.Sink: the script keeps device names for
// e.device; names and processes are resolved upstream.
func (s *Script) Fact(f *event.Fact) error {
	switch f.Kind {
	case event.FactDevice:
		if f.Name != "" {
			s.mu.Lock()
			s.devices[f.Dev] = f.Name
			s.mu.Unlock()
		}
	case event.FactStack, event.FactModule, event.FactKernelSymbol:
		s.mu.Lock()
		s.stacks.Fact(f)
		s.mu.Unlock()
	}
	return nil
}

// Event implements event.Sink: events that pass the filter go to
// on_event; in event-time runs, every() timers whose deadline the event's
// completion passed fire first.
func (s *Script) Event(e *event.Event) error {
	s.seen.Add(1)
	if s.done.Load() {
		return s.stopErr
	}
	if !s.filter.Match(e) {
		return nil
	}
	s.matched.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done.Load() {
		return s.stopErr
	}
	if !s.opts.WallClock {
		if err := s.advance(e.Time + e.Duration); err != nil {
			return err
		}
	}
	if s.onEvent == nil {
		return nil
	}
	// Each call gets its own value (a kept one must go stale, not change
	// under the script), carved from a slab: one allocation per 256.
	if len(s.slab) == 0 {
		s.slab = make([]eventValue, 256)
	}
	v := &s.slab[0]
	s.slab = s.slab[1:]
	*v = eventValue{s: s, gen: s.gen, ev: e}
	s.callArgs[0] = v
	err := s.call(s.onEvent, s.callArgs[:], e)
	s.callArgs[0] = nil
	s.gen++
	return err
}

// advance moves event time to t, firing the timers due on the way.
func (s *Script) advance(t int64) error {
	for len(s.timers) > 0 {
		var due *timer
		for _, tm := range s.timers {
			if tm.next <= t && (due == nil || tm.next < due.next) {
				due = tm
			}
		}
		if due == nil {
			break
		}
		if due.next > s.clock {
			s.clock = due.next
		}
		due.next += due.every
		if err := s.call(due.fn, nil, nil); err != nil {
			return err
		}
		if s.done.Load() {
			return s.stopErr
		}
	}
	if t > s.clock {
		s.clock = t
	}
	return nil
}

// wallLoop fires timers and flushes output on the wall clock.
func (s *Script) wallLoop() {
	defer s.wg.Done()
	const flushEvery = 200 * time.Millisecond
	tick := time.NewTicker(flushEvery / 4)
	defer tick.Stop()
	lastFlush := time.Now()
	for {
		select {
		case <-s.quit:
			return
		case <-tick.C:
		}
		s.mu.Lock()
		if s.finished || s.done.Load() {
			s.mu.Unlock()
			continue
		}
		now := s.now()
		for _, tm := range s.timers {
			if s.done.Load() {
				break
			}
			if tm.next <= now {
				s.clock = tm.next
				// A late tick fires once, not once per missed period.
				for tm.next <= now {
					tm.next += tm.every
				}
				if err := s.call(tm.fn, nil, nil); err != nil {
					// call has stopped the run; the source sees
					// the error on its next event.
					break
				}
			}
		}
		if time.Since(lastFlush) >= flushEvery {
			s.out.Flush()
			lastFlush = time.Now()
		}
		s.mu.Unlock()
	}
}

// now returns the script time: ns from the trace start.
func (s *Script) now() int64 {
	if s.opts.WallClock && s.begun {
		return time.Now().UnixNano() - s.header.StartWall
	}
	return s.clock
}

// End implements event.Sink: timers due before the trace's end fire,
// then on_end runs.
func (s *Script) End(t *event.Trailer) error {
	s.mu.Lock()
	tr := *t
	tr.Stats = event.Stats{Counters: append([]event.Counter(nil), t.Stats.Counters...)}
	s.stacks.AddStats(&tr.Stats)
	s.trailer = &tr
	var err error
	if !s.opts.WallClock && !s.done.Load() {
		err = s.advance(max(t.End, s.clock))
	}
	s.mu.Unlock()
	if cerr := s.Close(); err == nil && !errors.Is(cerr, ErrExit) {
		err = cerr
	}
	if errors.Is(err, ErrExit) {
		err = nil
	}
	return err
}

// Close ends the run if End did not: it stops the timers, calls on_end
// (also after exit() or a handler error, so partial aggregations are
// printed; not when the trace never began) and flushes the output. It is
// safe to call more than once.
func (s *Script) Close() error {
	if s.quit != nil {
		select {
		case <-s.quit:
		default:
			close(s.quit)
		}
		s.wg.Wait()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		return nil
	}
	s.finished = true
	var err error
	if s.onEnd != nil && s.begun {
		// on_end runs even after a fatal handler error: clear the
		// cancellation so it can.
		s.thread.Uncancel()
		s.done.Store(false)
		err = s.call(s.onEnd, nil, nil)
		if errors.Is(err, ErrExit) {
			err = nil
		}
		s.done.Store(true)
	}
	s.mem.close()
	if s.errCount > maxErrorsShown {
		fmt.Fprintf(s.stderr, "iotrace run: %d handler errors in all (the first %d shown)\n", s.errCount, maxErrorsShown)
	}
	if ferr := s.out.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("write script output: %w", ferr)
	}
	return err
}

// call runs fn under the step limit. e is the event being handled, for
// error reports. A failure stops the run unless KeepGoing.
func (s *Script) call(fn starlark.Callable, args starlark.Tuple, e *event.Event) error {
	s.thread.SetMaxExecutionSteps(s.thread.Steps + s.maxSteps)
	_, err := starlark.Call(s.thread, fn, args, nil)
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrExit) {
		s.stop(ErrExit)
		return ErrExit
	}
	if merr := s.mem.err(); merr != nil {
		// Past the memory limit: the run stops, --keep-going or not.
		s.stop(merr)
		return merr
	}
	rerr := s.evalError(err, fn.Name(), e)
	if s.opts.KeepGoing {
		s.errCount++
		s.thread.Uncancel()
		if s.errCount <= maxErrorsShown {
			s.out.Flush()
			fmt.Fprintf(s.stderr, "iotrace run: %v (continuing: --keep-going)\n", rerr)
		}
		return nil
	}
	s.stop(rerr)
	return rerr
}

// stop ends the run early: later events are refused with err and the
// source is asked to stop.
func (s *Script) stop(err error) {
	s.stopOnce.Do(func() {
		s.stopErr = err
		s.done.Store(true)
		if s.opts.Stop != nil {
			s.opts.Stop()
		}
	})
}

func (s *Script) flushErr() error {
	if err := s.out.Flush(); err != nil {
		return fmt.Errorf("write script output: %w", err)
	}
	return nil
}

// RuntimeError is a failure of the script: where (file:line:col and
// function), what, the call stack, and the event being handled.
type RuntimeError struct {
	// Pos is file:line:col of the failing statement.
	Pos string
	// Func is the function the error happened in.
	Func string
	// Msg says what went wrong.
	Msg string
	// Handler is the handler that was running (on_event, on_end, ...).
	Handler string
	// Event describes the event being handled, "" outside on_event.
	Event string
	// Backtrace is the Starlark call stack.
	Backtrace string
}

func (e *RuntimeError) Error() string {
	var b strings.Builder
	if e.Pos != "" {
		b.WriteString(e.Pos)
		b.WriteString(": ")
	}
	if e.Func != "" {
		fmt.Fprintf(&b, "in %s: ", e.Func)
	}
	b.WriteString(e.Msg)
	if e.Event != "" {
		b.WriteString("\n  while handling event: ")
		b.WriteString(e.Event)
	}
	return b.String()
}

// evalError turns an interpreter error into a RuntimeError.
func (s *Script) evalError(err error, handler string, e *event.Event) error {
	re := &RuntimeError{Msg: err.Error(), Handler: handler}
	var ee *starlark.EvalError
	if errors.As(err, &ee) {
		re.Msg = ee.Msg
		re.Backtrace = ee.Backtrace()
		// The innermost Starlark frame (not a builtin's).
		for i := 0; i < len(ee.CallStack); i++ {
			fr := ee.CallStack.At(i)
			if fr.Pos.IsValid() && fr.Pos.Line > 0 {
				re.Pos = fr.Pos.String()
				re.Func = fr.Name
				break
			}
		}
		if i := strings.Index(re.Msg, "Starlark computation cancelled: "); i >= 0 {
			re.Msg = re.Msg[i+len("Starlark computation cancelled: "):]
		}
	}
	if re.Func == "<toplevel>" {
		re.Func = ""
	}
	if e != nil {
		re.Event = describeEvent(e)
	}
	return re
}

package live

import (
	"go/build"
	"reflect"
	"syscall"
	"testing"
	"unsafe"
)

// A small model of the C layout rules (MSVC, x86 and x64): every field is
// aligned to its own alignment (8-byte integers to 8 on both), a structure
// to its largest member alignment. It lays out the field lists below for
// either pointer size; the test checks the result against the documented
// offsets and sizes, and the Go structures against the result for the
// native pointer size.

type cField struct {
	name string
	typ  cType
}

type cType struct {
	size, align func(ptr int) int
	fields      []cField // for structures
	elem        *cType   // for arrays
	n           int
}

func scalar(n int) cType {
	return cType{size: func(int) int { return n }, align: func(int) int { return n }}
}

var (
	u8   = scalar(1)
	u16  = scalar(2)
	u32  = scalar(4)
	u64  = scalar(8)
	ptr  = cType{size: func(p int) int { return p }, align: func(p int) int { return p }}
	guid = cType{size: func(int) int { return 16 }, align: func(int) int { return 4 }}
)

func array(t cType, n int) cType {
	return cType{size: func(p int) int { return t.size(p) * n }, align: t.align, elem: &t, n: n}
}

func cStruct(fields ...cField) cType {
	t := cType{fields: fields}
	t.align = func(p int) int {
		a := 1
		for _, f := range fields {
			a = max(a, f.typ.align(p))
		}
		return a
	}
	t.size = func(p int) int {
		_, size := layoutOf(t, p)
		return size
	}
	return t
}

func alignUp(n, a int) int { return (n + a - 1) / a * a }

// layoutOf returns the offset of every field (nested fields as
// "Outer.Inner") and the size of t.
func layoutOf(t cType, p int) (map[string]int, int) {
	offs := map[string]int{}
	off := 0
	for _, f := range t.fields {
		off = alignUp(off, f.typ.align(p))
		offs[f.name] = off
		if f.typ.fields != nil {
			inner, _ := layoutOf(f.typ, p)
			for k, v := range inner {
				offs[f.name+"."+k] = off + v
			}
		}
		off += f.typ.size(p)
	}
	return offs, alignUp(off, t.align(p))
}

var (
	cWnodeHeader = cStruct(
		cField{"BufferSize", u32}, cField{"ProviderID", u32}, cField{"HistoricalContext", u64},
		cField{"TimeStamp", u64}, cField{"Guid", guid}, cField{"ClientContext", u32}, cField{"Flags", u32})
	cEventTraceProperties = cStruct(
		cField{"Wnode", cWnodeHeader}, cField{"BufferSize", u32}, cField{"MinimumBuffers", u32},
		cField{"MaximumBuffers", u32}, cField{"MaximumFileSize", u32}, cField{"LogFileMode", u32},
		cField{"FlushTimer", u32}, cField{"EnableFlags", u32}, cField{"AgeLimit", u32},
		cField{"NumberOfBuffers", u32}, cField{"FreeBuffers", u32}, cField{"EventsLost", u32},
		cField{"BuffersWritten", u32}, cField{"LogBuffersLost", u32}, cField{"RealTimeBuffersLost", u32},
		cField{"LoggerThreadID", ptr}, cField{"LogFileNameOffset", u32}, cField{"LoggerNameOffset", u32})
	cEventTraceHeader = cStruct(
		cField{"Size", u16}, cField{"FieldTypeFlags", u16}, cField{"Type", u8}, cField{"Level", u8},
		cField{"Version", u16}, cField{"ThreadID", u32}, cField{"ProcessID", u32}, cField{"TimeStamp", u64},
		cField{"Guid", guid}, cField{"KernelTime", u32}, cField{"UserTime", u32})
	cEventTrace = cStruct(
		cField{"Header", cEventTraceHeader}, cField{"InstanceID", u32}, cField{"ParentInstanceID", u32},
		cField{"ParentGuid", guid}, cField{"MofData", ptr}, cField{"MofLength", u32}, cField{"ClientContext", u32})
	cTimeZone = cStruct(
		cField{"Bias", u32}, cField{"StandardName", array(u16, 32)}, cField{"StandardDate", array(u16, 8)},
		cField{"StandardBias", u32}, cField{"DaylightName", array(u16, 32)}, cField{"DaylightDate", array(u16, 8)},
		cField{"DaylightBias", u32})
	cTraceLogfileHeader = cStruct(
		cField{"BufferSize", u32}, cField{"Version", u32}, cField{"ProviderVersion", u32},
		cField{"NumberOfProcessors", u32}, cField{"EndTime", u64}, cField{"TimerResolution", u32},
		cField{"MaximumFileSize", u32}, cField{"LogFileMode", u32}, cField{"BuffersWritten", u32},
		cField{"StartBuffers", u32}, cField{"PointerSize", u32}, cField{"EventsLost", u32},
		cField{"CPUSpeedInMHz", u32}, cField{"LoggerName", ptr}, cField{"LogFileName", ptr},
		cField{"TimeZone", cTimeZone}, cField{"BootTime", u64}, cField{"PerfFreq", u64},
		cField{"StartTime", u64}, cField{"ReservedFlags", u32}, cField{"BuffersLost", u32})
	cEventTraceLogfile = cStruct(
		cField{"LogFileName", ptr}, cField{"LoggerName", ptr}, cField{"CurrentTime", u64},
		cField{"BuffersRead", u32}, cField{"ProcessTraceMode", u32}, cField{"CurrentEvent", cEventTrace},
		cField{"LogfileHeader", cTraceLogfileHeader}, cField{"BufferCallback", ptr}, cField{"BufferSize", u32},
		cField{"Filled", u32}, cField{"EventsLost", u32}, cField{"EventRecordCallback", ptr},
		cField{"IsKernelTrace", u32}, cField{"Context", ptr})
	cEventDescriptor = cStruct(
		cField{"ID", u16}, cField{"Version", u8}, cField{"Channel", u8}, cField{"Level", u8},
		cField{"Opcode", u8}, cField{"Task", u16}, cField{"Keyword", u64})
	cEventHeader = cStruct(
		cField{"Size", u16}, cField{"HeaderType", u16}, cField{"Flags", u16}, cField{"EventProperty", u16},
		cField{"ThreadID", u32}, cField{"ProcessID", u32}, cField{"TimeStamp", u64}, cField{"ProviderID", guid},
		cField{"EventDescriptor", cEventDescriptor}, cField{"KernelTime", u32}, cField{"UserTime", u32},
		cField{"ActivityID", guid})
	cBufferContext = cStruct(cField{"ProcessorNumber", u8}, cField{"Alignment", u8}, cField{"LoggerID", u16})
	cExtItem       = cStruct(
		cField{"Reserved1", u16}, cField{"ExtType", u16}, cField{"Linkage", u16}, cField{"DataSize", u16},
		cField{"DataPtr", u64})
	// CLASSIC_EVENT_ID (evntrace.h): GUID EventGuid; UCHAR Type; UCHAR Reserved[7].
	cClassicEventID = cStruct(cField{"EventGUID", guid}, cField{"Type", u8}, cField{"Reserved", array(u8, 7)})
	cEventRecord    = cStruct(
		cField{"EventHeader", cEventHeader}, cField{"BufferContext", cBufferContext},
		cField{"ExtendedDataCount", u16}, cField{"UserDataLength", u16}, cField{"ExtendedData", ptr},
		cField{"UserData", ptr}, cField{"UserContext", ptr})
)

// documented holds the sizes and key offsets of the Windows SDK
// structures for 32-bit ([0]) and 64-bit ([1]) pointers.
var documented = []struct {
	name  string
	c     cType
	goTyp any
	size  [2]int
	offs  map[string][2]int
}{
	{"EVENT_TRACE_PROPERTIES", cEventTraceProperties, EventTraceProperties{}, [2]int{120, 120}, map[string][2]int{
		"Wnode.Guid": {24, 24}, "Wnode.ClientContext": {40, 40}, "BufferSize": {48, 48}, "LogFileMode": {64, 64},
		"EnableFlags": {72, 72}, "EventsLost": {88, 88}, "RealTimeBuffersLost": {100, 100},
		"LoggerThreadID": {104, 104}, "LogFileNameOffset": {108, 112}, "LoggerNameOffset": {112, 116}}},
	{"EVENT_TRACE_LOGFILEW", cEventTraceLogfile, EventTraceLogfile{}, [2]int{416, 448}, map[string][2]int{
		"LoggerName": {4, 8}, "CurrentTime": {8, 16}, "ProcessTraceMode": {20, 28}, "CurrentEvent": {24, 32},
		"LogfileHeader": {112, 120}, "BufferCallback": {384, 400}, "EventsLost": {396, 416},
		"EventRecordCallback": {400, 424}, "IsKernelTrace": {404, 432}, "Context": {408, 440}}},
	{"TRACE_LOGFILE_HEADER", cTraceLogfileHeader, TraceLogfileHeader{}, [2]int{272, 280}, map[string][2]int{
		"PointerSize": {44, 44}, "EventsLost": {48, 48}, "LoggerName": {56, 56}, "LogFileName": {60, 64},
		"TimeZone": {64, 72}, "BootTime": {240, 248}, "PerfFreq": {248, 256}, "StartTime": {256, 264},
		"ReservedFlags": {264, 272}, "BuffersLost": {268, 276}}},
	{"EVENT_TRACE", cEventTrace, EventTrace{}, [2]int{88, 88}, map[string][2]int{
		"Header.TimeStamp": {16, 16}, "Header.Guid": {24, 24}, "MofData": {72, 72}, "MofLength": {76, 80}, "ClientContext": {80, 84}}},
	{"EVENT_RECORD", cEventRecord, EventRecord{}, [2]int{104, 112}, map[string][2]int{
		"BufferContext": {80, 80}, "ExtendedDataCount": {84, 84}, "UserDataLength": {86, 86},
		"ExtendedData": {88, 88}, "UserData": {92, 96}, "UserContext": {96, 104}}},
	{"EVENT_HEADER", cEventHeader, EventHeader{}, [2]int{80, 80}, map[string][2]int{
		"Flags": {4, 4}, "ThreadID": {8, 8}, "TimeStamp": {16, 16}, "ProviderID": {24, 24},
		"EventDescriptor": {40, 40}, "EventDescriptor.Keyword": {48, 48}, "KernelTime": {56, 56}, "ActivityID": {64, 64}}},
	{"EVENT_HEADER_EXTENDED_DATA_ITEM", cExtItem, EventHeaderExtendedDataItem{}, [2]int{16, 16}, map[string][2]int{
		"DataSize": {6, 6}, "DataPtr": {8, 8}}},
	{"CLASSIC_EVENT_ID", cClassicEventID, ClassicEventID{}, [2]int{24, 24}, map[string][2]int{
		"EventGUID": {0, 0}, "Type": {16, 16}, "Reserved": {17, 17}}},
	{"WNODE_HEADER", cWnodeHeader, WnodeHeader{}, [2]int{48, 48}, map[string][2]int{"HistoricalContext": {8, 8}, "Flags": {44, 44}}},
}

func TestLayoutsBothPointerSizes(t *testing.T) {
	for _, d := range documented {
		for i, p := range []int{4, 8} {
			offs, size := layoutOf(d.c, p)
			if size != d.size[i] {
				t.Errorf("%s (%d-bit): size %d, documented %d", d.name, p*8, size, d.size[i])
			}
			for f, want := range d.offs {
				got, ok := offs[f]
				if !ok || got != want[i] {
					t.Errorf("%s (%d-bit): %s at %d, documented %d", d.name, p*8, f, got, want[i])
				}
			}
		}
	}
}

// TestGoStructsMatchC checks the Go structures used with the Win32 API
// against the C layout for this platform's pointer size (64-bit: the
// Windows targets amd64 and arm64).
func TestGoStructsMatchC(t *testing.T) {
	p := int(unsafe.Sizeof(uintptr(0)))
	if p != 8 {
		t.Skipf("the Go structures model 64-bit Windows; this is a %d-bit build", p*8)
	}
	for _, d := range documented {
		offs, size := layoutOf(d.c, p)
		rt := reflect.TypeOf(d.goTyp)
		if int(rt.Size()) != size {
			t.Errorf("%s: Go size %d, C size %d", d.name, rt.Size(), size)
		}
		checkGoFields(t, d.name, rt, "", 0, offs)
	}
	if sizeofEventTraceProperties != 120 || sizeofEventTraceLogfile != 448 || sizeofEventRecord != 112 || sizeofEventHeader != 80 {
		t.Errorf("size constants: %d %d %d %d", sizeofEventTraceProperties, sizeofEventTraceLogfile, sizeofEventRecord, sizeofEventHeader)
	}
}

func checkGoFields(t *testing.T, name string, rt reflect.Type, prefix string, base uintptr, offs map[string]int) {
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		full := prefix + f.Name
		want, ok := offs[full]
		if !ok {
			if rt.Name() == "GUID" { // GUID members are not modelled
				continue
			}
			t.Errorf("%s: Go field %s has no C counterpart", name, full)
			continue
		}
		if int(base+f.Offset) != want {
			t.Errorf("%s: Go field %s at %d, C at %d", name, full, base+f.Offset, want)
		}
		if f.Type.Kind() == reflect.Struct && f.Type.Name() != "GUID" {
			checkGoFields(t, name, f.Type, full+".", base+f.Offset, offs)
		}
	}
}

func TestCloseTraceErr(t *testing.T) {
	if err := closeTraceErr(syscall.Errno(7007)); err != nil {
		t.Errorf("ERROR_CTX_CLOSE_PENDING is a success, got %v", err)
	}
	if err := closeTraceErr(syscall.Errno(234)); err == nil {
		t.Error("ERROR_MORE_DATA taken for a pending close")
	}
	if err := closeTraceErr(nil); err != nil {
		t.Error(err)
	}
}

// TestNoPointerAsInteger: a Go pointer handed to Windows is held in a
// pointer-typed field, so that the collector keeps what it points to
// while the structure lives (OpenTrace's names); an integer Windows
// hands back (the consumer's context) is not held as a pointer, which
// the runtime may reject when it finds an invalid one on a stack.
func TestNoPointerAsInteger(t *testing.T) {
	for _, c := range []struct {
		typ   any
		field string
		kind  reflect.Kind
	}{
		{EventTraceLogfile{}, "LogFileName", reflect.Pointer},
		{EventTraceLogfile{}, "LoggerName", reflect.Pointer},
		{EventTraceLogfile{}, "Context", reflect.Uintptr},
		{EventRecord{}, "UserContext", reflect.Uintptr},
	} {
		f, ok := reflect.TypeOf(c.typ).FieldByName(c.field)
		if !ok || f.Type.Kind() != c.kind {
			t.Errorf("%T.%s: %v, want a %v", c.typ, c.field, f.Type, c.kind)
		}
	}
}

// TestWindowsTargets: the Windows implementation (whose structures are
// the 64-bit layouts and which passes 64-bit handles in one register)
// builds for windows/amd64 and windows/arm64 only; windows/386 and the
// other systems get DefaultAPI's refusal.
func TestWindowsTargets(t *testing.T) {
	impl := []string{"api_windows.go", "callback_windows.go"}
	for _, c := range []struct {
		goos, goarch string
		windows      bool
	}{{"windows", "amd64", true}, {"windows", "arm64", true}, {"windows", "386", false}, {"linux", "amd64", false}} {
		ctx := build.Default
		ctx.GOOS, ctx.GOARCH, ctx.CgoEnabled = c.goos, c.goarch, false
		for _, name := range append(impl, "api_other.go") {
			ok, err := ctx.MatchFile(".", name)
			if err != nil {
				t.Fatal(err)
			}
			if want := c.windows == (name != "api_other.go"); ok != want {
				t.Errorf("%s/%s: %s built %v, want %v", c.goos, c.goarch, name, ok, want)
			}
		}
	}
}

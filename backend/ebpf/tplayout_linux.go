package ebpf

import (
	"github.com/cilium/ebpf/btf"
)

// tpLayout says how this kernel passes the arguments of the BTF
// tracepoints whose prototypes changed between versions (see the programs
// in bpf/iotrace.bpf.c for which kernel has which). A tracepoint whose
// prototype is none that the programs read is left out, as one the
// kernel lacks is.
type tpLayout struct {
	// uringSubmit: io_uring_submit_req(struct io_kiocb *req) (6.5+; 6.2 has
	// none).
	uringSubmit bool
	// uringComplete: io_uring_complete passes the request (5.19+);
	// uringCQE: as (ctx, req, struct io_uring_cqe *cqe) (after 6.8),
	// else as (ctx, req, u64 user_data, int res, unsigned cflags, ...).
	uringComplete, uringCQE bool
	// evict: mm_filemap_delete_from_page_cache(struct folio *) (5.19+),
	// or (struct page *) (5.15) when evictPage.
	evict, evictPage bool
}

// readTPLayout reads the prototypes from the kernel's BTF s: the typedef
// btf_trace_<name> is a pointer to the function the tracepoint calls
// (void *data, then the tracepoint's arguments).
func readTPLayout(s *btf.Spec) tpLayout {
	var l tpLayout
	if args, ok := tracepointArgs(s, "io_uring_submit_req"); ok && len(args) == 1 {
		l.uringSubmit = pointee(args[0]) == "io_kiocb"
	}
	if args, ok := tracepointArgs(s, "io_uring_complete"); ok && len(args) >= 3 && isPointer(args[1]) {
		switch {
		case len(args) == 3 && pointee(args[2]) == "io_uring_cqe":
			l.uringComplete, l.uringCQE = true, true
		case len(args) >= 5 && isInt(args[2], 8) && isInt(args[3], 4) && isInt(args[4], 4):
			l.uringComplete = true
		}
	}
	if args, ok := tracepointArgs(s, "mm_filemap_delete_from_page_cache"); ok && len(args) == 1 {
		switch pointee(args[0]) {
		case "folio":
			l.evict = true
		case "page":
			l.evict, l.evictPage = true, true
		}
	}
	return l
}

// tracepointArgs returns the types of the arguments of the BTF tracepoint
// name; false when s has no such tracepoint.
func tracepointArgs(s *btf.Spec, name string) ([]btf.Type, bool) {
	var td *btf.Typedef
	if err := s.TypeByName("btf_trace_"+name, &td); err != nil {
		return nil, false
	}
	ptr, ok := btf.UnderlyingType(td.Type).(*btf.Pointer)
	if !ok {
		return nil, false
	}
	proto, ok := btf.UnderlyingType(ptr.Target).(*btf.FuncProto)
	if !ok || len(proto.Params) == 0 {
		return nil, false
	}
	args := make([]btf.Type, 0, len(proto.Params)-1)
	for _, p := range proto.Params[1:] { // [0] is the probe's void *data
		args = append(args, p.Type)
	}
	return args, true
}

// pointee is the name of the struct t points to, "" when t is not a
// pointer to a struct.
func pointee(t btf.Type) string {
	ptr, ok := btf.UnderlyingType(t).(*btf.Pointer)
	if !ok {
		return ""
	}
	if st, ok := btf.UnderlyingType(ptr.Target).(*btf.Struct); ok {
		return st.Name
	}
	return ""
}

func isPointer(t btf.Type) bool {
	_, ok := btf.UnderlyingType(t).(*btf.Pointer)
	return ok
}

// isInt reports whether t is an integer of size bytes.
func isInt(t btf.Type, size uint32) bool {
	i, ok := btf.UnderlyingType(t).(*btf.Int)
	return ok && i.Size == size
}

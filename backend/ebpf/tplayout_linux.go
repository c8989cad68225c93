package ebpf

import (
	"github.com/iotrace/iotrace/backend/ebpf/internal/rawbtf"
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
func readTPLayout(s *rawbtf.Spec) tpLayout {
	var l tpLayout
	if args, ok := s.TracepointArgs("io_uring_submit_req"); ok && len(args) == 1 {
		l.uringSubmit = pointee(s, args[0]) == "io_kiocb"
	}
	if args, ok := s.TracepointArgs("io_uring_complete"); ok && len(args) >= 3 && isPointer(s, args[1]) {
		switch {
		case len(args) == 3 && pointee(s, args[2]) == "io_uring_cqe":
			l.uringComplete, l.uringCQE = true, true
		case len(args) >= 5 && isInt(s, args[2], 8) && isInt(s, args[3], 4) && isInt(s, args[4], 4):
			l.uringComplete = true
		}
	}
	if args, ok := s.TracepointArgs("mm_filemap_delete_from_page_cache"); ok && len(args) == 1 {
		switch pointee(s, args[0]) {
		case "folio":
			l.evict = true
		case "page":
			l.evict, l.evictPage = true, true
		}
	}
	return l
}

// pointee is the name of the struct t points to, "" when t is not a
// pointer to a struct.
func pointee(s *rawbtf.Spec, t rawbtf.TypeID) string {
	if p, ok := s.PointerTo(t); ok && s.Kind(p) == rawbtf.KindStruct {
		return s.Name(p)
	}
	return ""
}

func isPointer(s *rawbtf.Spec, t rawbtf.TypeID) bool {
	_, ok := s.PointerTo(t)
	return ok
}

// isInt reports whether t is an integer of size bytes.
func isInt(s *rawbtf.Spec, t rawbtf.TypeID, size uint32) bool {
	n, ok := s.IntSize(t)
	return ok && n == size
}

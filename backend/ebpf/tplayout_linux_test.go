package ebpf

import (
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/iotrace/iotrace/backend/ebpf/internal/rawbtf"
)

// btfTrace is the typedef btf_trace_<name> of a kernel whose tracepoint
// name takes args.
func btfTrace(name string, args ...btf.Type) btf.Type {
	params := []btf.FuncParam{{Name: "__data", Type: &btf.Pointer{Target: &btf.Void{}}}}
	for _, a := range args {
		params = append(params, btf.FuncParam{Type: a})
	}
	return &btf.Typedef{Name: "btf_trace_" + name, Type: &btf.Pointer{Target: &btf.FuncProto{Return: &btf.Void{}, Params: params}}}
}

// TestReadTPLayout: the prototypes of io_uring_submit_req,
// io_uring_complete and mm_filemap_delete_from_page_cache as the kernels
// we support declare them (5.15, 5.19 .. 6.8, 6.18), and ones the
// programs cannot read, are told apart from the BTF alone.
func TestReadTPLayout(t *testing.T) {
	u8 := &btf.Int{Name: "u8", Size: 1}
	u32 := &btf.Int{Name: "unsigned int", Size: 4}
	s32 := &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	u64 := &btf.Int{Name: "u64", Size: 8}
	ptr := func(name string) btf.Type { return &btf.Pointer{Target: &btf.Struct{Name: name}} }
	void := &btf.Pointer{Target: &btf.Void{}}
	for _, c := range []struct {
		name  string
		types []btf.Type
		want  tpLayout
	}{
		{"none", nil, tpLayout{}},
		{"5.15", []btf.Type{
			btfTrace("io_uring_complete", void, u64, s32, u32),
			btfTrace("mm_filemap_delete_from_page_cache", ptr("page")),
		}, tpLayout{evict: true, evictPage: true}},
		{"5.19 .. 6.2", []btf.Type{
			btfTrace("io_uring_complete", void, void, u64, s32, u32, u64, u64),
			btfTrace("mm_filemap_delete_from_page_cache", ptr("folio")),
		}, tpLayout{uringComplete: true, evict: true}},
		{"6.5 .. 6.8", []btf.Type{
			btfTrace("io_uring_submit_req", ptr("io_kiocb")),
			btfTrace("io_uring_complete", void, void, u64, s32, u32, u64, u64),
			btfTrace("mm_filemap_delete_from_page_cache", ptr("folio")),
		}, tpLayout{uringSubmit: true, uringComplete: true, evict: true}},
		{"6.18", []btf.Type{
			btfTrace("io_uring_submit_req", ptr("io_kiocb")),
			btfTrace("io_uring_complete", ptr("io_ring_ctx"), void, ptr("io_uring_cqe")),
			btfTrace("mm_filemap_delete_from_page_cache", ptr("folio")),
		}, tpLayout{uringSubmit: true, uringComplete: true, uringCQE: true, evict: true}},
		{"unknown prototypes", []btf.Type{
			btfTrace("io_uring_submit_req", void, u8),
			btfTrace("io_uring_complete", void, void, ptr("io_uring_cqe32")),
			btfTrace("mm_filemap_delete_from_page_cache", ptr("netmem")),
		}, tpLayout{}},
		{"not a function pointer", []btf.Type{
			&btf.Typedef{Name: "btf_trace_io_uring_submit_req", Type: u64},
		}, tpLayout{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := btf.NewBuilder(append([]btf.Type{u8}, c.types...), nil)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := b.Marshal(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			s, err := rawbtf.Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			if got := readTPLayout(s); got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

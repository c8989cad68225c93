package ebpf

import (
	"fmt"

	"github.com/cilium/ebpf/link"
)

// attachEvict attaches the program that reports pages of read files
// leaving the page cache (page-cache provenance, pagecache.h), a BTF
// tracepoint (a perf-event one took 50-100 ms to detach); a kernel without
// the tracepoint is traced without it (listed as missing).
func (p *probes) attachEvict() error {
	if !p.tp.evict {
		p.missing = append(p.missing, "filemap:mm_filemap_delete_from_page_cache (a page evicted and brought back without disk I/O may count as read-ahead)")
		return nil
	}
	l, err := link.AttachTracing(link.TracingOptions{Program: p.objs.PcEvict})
	if err != nil {
		return fmt.Errorf("ebpf: attach filemap:mm_filemap_delete_from_page_cache (tp_btf): %w", err)
	}
	p.others = append(p.others, l)
	return nil
}

package ebpf

import (
	"errors"
	"fmt"
	"os"

	"github.com/cilium/ebpf/link"
)

// attachEvict attaches the program that reports pages of read files
// leaving the page cache (page-cache provenance, pagecache.h); a kernel
// without the tracepoint is traced without it (listed as missing).
func (p *probes) attachEvict() error {
	l, err := link.Tracepoint("filemap", "mm_filemap_delete_from_page_cache", p.objs.PcEvict, nil)
	if errors.Is(err, os.ErrNotExist) {
		p.missing = append(p.missing, "filemap:mm_filemap_delete_from_page_cache (a page evicted and brought back without disk I/O may count as read-ahead)")
		return nil
	}
	if err != nil {
		return fmt.Errorf("ebpf: attach filemap:mm_filemap_delete_from_page_cache: %w", err)
	}
	p.others = append(p.others, l)
	return nil
}

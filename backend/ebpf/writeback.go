package ebpf

// maxWritten bounds the files the tracker remembers as written by the
// traced processes (for --wait-writeback and the pages left dirty).
const maxWritten = 4096

// wrote remembers that a traced process wrote to the file at path (an
// absolute path: pipes and sockets are left out).
func (t *tracker) wrote(path string) {
	if len(path) == 0 || path[0] != '/' {
		return
	}
	if t.written == nil {
		t.written = make(map[string]struct{})
	}
	if _, ok := t.written[path]; ok {
		return
	}
	if len(t.written) >= maxWritten {
		t.writtenOver++
		return
	}
	t.written[path] = struct{}{}
}

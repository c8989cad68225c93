package input

import (
	"os"

	"github.com/iotrace/iotrace/tracefile"
)

var iotFormat = Format{
	Name:        "iot",
	Description: "iotrace trace file",
	Match:       tracefile.Match,
	Open:        openIOT,
}

// iotReader is a .iot file's reader with the bytes read from the file
// counted (Progress).
type iotReader struct {
	*tracefile.Reader
	file *countedFile
}

func openIOT(path string) (Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	c, err := newCountedFile(f)
	if err == nil {
		var r *tracefile.Reader
		if r, err = tracefile.NewNamedReader(c, path); err == nil {
			// The passes start from the beginning again (ScanFacts
			// rewinds): what opening read is not theirs.
			c.n.Store(0)
			return &iotReader{Reader: r, file: c}, nil
		}
	}
	f.Close()
	return nil, err
}

// BytesRead implements Progress.
func (r *iotReader) BytesRead() (read, size int64) { return r.file.n.Load(), r.file.size }

// Close implements Reader.
func (r *iotReader) Close() error {
	r.Reader.Close()
	return r.file.f.Close()
}

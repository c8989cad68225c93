package live

import (
	"testing"

	"github.com/iotrace/iotrace/event"
)

// TestTracedLayers: the header's layers follow the session's flags.
func TestTracedLayers(t *testing.T) {
	file, block := event.LayersOf(event.LayerFile), event.LayersOf(event.LayerBlock)
	for _, c := range []struct {
		flags uint32
		want  event.Layers
	}{
		{DefaultFlags, file | block},
		{FlagFileIO | FlagFileIOInit | FlagDiskFileIO | FlagProcess, file},
		{FlagDiskIO | FlagDiskIOInit | FlagDiskFileIO, block},
		{FlagProcess | FlagDiskFileIO, 0},
	} {
		if got := tracedLayers(c.flags); got != c.want {
			t.Errorf("flags %#x: layers %q, want %q", c.flags, got, c.want)
		}
	}
}

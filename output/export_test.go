package output

import (
	"context"
	"io"

	"github.com/iotrace/iotrace/event"
)

// ReadJSONLGeneric is ReadJSONL with every line decoded by go-json, for
// the benchmarks of package output_test.
func ReadJSONLGeneric(ctx context.Context, r io.Reader, name string, sink event.Sink) error {
	return readJSONL(ctx, r, name, sink, readGeneric)
}

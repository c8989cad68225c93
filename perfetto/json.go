package perfetto

import (
	"strconv"

	"github.com/iotrace/iotrace/internal/jsonenc"
)

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte { return jsonenc.AppendString(b, s) }

// appendMicros appends ns as microseconds with three decimals.
func appendMicros(b []byte, ns int64) []byte {
	if ns < 0 {
		b = append(b, '-')
		ns = -ns
	}
	b = strconv.AppendInt(b, ns/1000, 10)
	frac := ns % 1000
	if frac == 0 {
		return b
	}
	b = append(b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
	return b
}

package names

import (
	"math/rand/v2"
	"testing"
	"unicode/utf16"

	"github.com/iotrace/iotrace/backend/etw/kernel"
)

// TestSameASCII checks sameASCII against the plain comparison on strings
// of every length up to 19 that differ in one unit, or hold a non-ASCII
// byte or a unit above 0xff.
func TestSameASCII(t *testing.T) {
	ref := func(w kernel.WStr, s string) bool {
		if len(w) != 2*len(s) {
			return false
		}
		for i := 0; i < len(s); i++ {
			if s[i] >= 0x80 || w[2*i] != s[i] || w[2*i+1] != 0 {
				return false
			}
		}
		return true
	}
	enc := func(s string) kernel.WStr {
		var b []byte
		for _, u := range utf16.Encode([]rune(s)) {
			b = append(b, byte(u), byte(u>>8))
		}
		return b
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 0; n < 20; n++ {
		for range 200 {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte('a' + rng.IntN(26))
			}
			s := string(b)
			w := enc(s)
			if !sameASCII(w, s) {
				t.Fatalf("%q: not the same as itself", s)
			}
			if n == 0 {
				continue
			}
			k := rng.IntN(n)
			for _, mut := range []func(){
				func() { w[2*k] ^= 1 },
				func() { w[2*k+1] = 1 },
				func() { b[k] = 0xc3; s = string(b); w = enc(string(b)) },
			} {
				w, s = enc(string(b)), string(b)
				mut()
				if got, want := sameASCII(w, s), ref(w, s); got != want {
					t.Fatalf("%q against %x: %v, want %v", s, []byte(w), got, want)
				}
			}
		}
	}
}

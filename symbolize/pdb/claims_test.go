package pdb

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"strings"
	"testing"
)

// repeatedBlockMSF returns an MSF file of blocks of blockSize bytes whose
// stream 1 claims claim bytes by listing one data block over and over:
// the stream directory is the only large part.
func repeatedBlockMSF(blockSize, claim uint32) []byte {
	nb := (claim + blockSize - 1) / blockSize
	dir := binary.LittleEndian.AppendUint32(nil, 2) // streams
	dir = binary.LittleEndian.AppendUint32(dir, 0)
	dir = binary.LittleEndian.AppendUint32(dir, claim)
	const data = 2 // block 0: superblock, 1: directory block map, 2: data
	for range nb {
		dir = binary.LittleEndian.AppendUint32(dir, data)
	}
	nDir := (uint32(len(dir)) + blockSize - 1) / blockSize
	numBlocks := 3 + nDir
	out := make([]byte, int(numBlocks)*int(blockSize))
	copy(out, msfMagic)
	le.PutUint32(out[32:], blockSize)
	le.PutUint32(out[36:], 1) // free block map
	le.PutUint32(out[40:], numBlocks)
	le.PutUint32(out[44:], uint32(len(dir)))
	le.PutUint32(out[52:], 1)
	for i := range nDir {
		le.PutUint32(out[int(blockSize)+4*int(i):], 3+i)
	}
	copy(out[3*int(blockSize):], dir)
	return out
}

// TestRepeatedBlockClaim: a PDB of a few hundred KB whose stream lists
// one block again and again to claim 1 GiB (issue 25, item 4: 2.1 GB
// taken; 4 GiB claimed ended in Go's fatal out of memory) is refused
// before the stream is read.
func TestRepeatedBlockClaim(t *testing.T) {
	for _, claim := range []uint32{1 << 30, 0xfff00000} {
		b := repeatedBlockMSF(32768, claim)
		if len(b) > 1<<20 {
			t.Fatalf("the crafted file is %d bytes", len(b))
		}
		var err error
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err = Parse(bytes.NewReader(b), int64(len(b)))
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), "listed twice") {
			t.Errorf("claim of %d bytes in a %d-byte file: %v", claim, len(b), err)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 100<<20 {
			t.Errorf("claim of %d bytes: %d MB allocated", claim, n>>20)
		}
	}
}

package kernel

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/backend/etw/ownprovider"
	"github.com/iotrace/iotrace/backend/etw/record"
)

var writeCorpus = flag.Bool("write-corpus", false, "rewrite FuzzDecode's seeds of real payloads in testdata/fuzz/FuzzDecode")

const seedDir = "testdata/fuzz/FuzzDecode"

// seedName names the seed of key k: CLASS_CODE_vVERSION_pPTRSIZE, then
// "_" and a suffix for an input the fuzzer found.
func seedName(k Key) string {
	return fmt.Sprintf("%s_%d_v%d_p%d", k.Class, k.Code, k.Version, k.PtrSize)
}

// parseSeedName returns the key a seed file is named for.
func parseSeedName(name string) (Key, error) {
	parts := strings.Split(name, "_")
	if len(parts) < 4 || !strings.HasPrefix(parts[2], "v") || !strings.HasPrefix(parts[3], "p") {
		return Key{}, fmt.Errorf("seed %s: not named CLASS_CODE_vVERSION_pPTRSIZE", name)
	}
	c := Class(slices.Index(classNames[:], parts[0]))
	code, err1 := strconv.ParseUint(parts[1], 10, 16)
	v, err2 := strconv.ParseUint(parts[2][1:], 10, 16)
	p, err3 := strconv.ParseUint(parts[3][1:], 10, 8)
	if c <= ClassUnknown || err1 != nil || err2 != nil || err3 != nil {
		return Key{}, fmt.Errorf("seed %s: bad class, code, version or pointer size", name)
	}
	return Key{Class: c, Code: uint16(code), Version: uint16(v), PtrSize: uint8(p)}, nil
}

// seedInput is one FuzzDecode input.
type seedInput struct {
	guid1         uint32
	code, version uint16
	ptr           uint8
	data          []byte
}

// encode writes in as a corpus file ("go test fuzz v1").
func (in seedInput) encode() []byte {
	return fmt.Appendf(nil, "go test fuzz v1\nuint32(%d)\nuint16(%d)\nuint16(%d)\nuint8(%d)\n[]byte(%q)\n",
		in.guid1, in.code, in.version, in.ptr, in.data)
}

// parseSeed reads a corpus file of FuzzDecode.
func parseSeed(b []byte) (seedInput, error) {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) != 6 || lines[0] != "go test fuzz v1" {
		return seedInput{}, fmt.Errorf("not a FuzzDecode input of 5 values: %q", b)
	}
	num := func(line, typ string, bits int) (uint64, error) {
		s, ok := strings.CutPrefix(line, typ+"(")
		if !ok || !strings.HasSuffix(s, ")") {
			return 0, fmt.Errorf("%q is not a %s", line, typ)
		}
		return strconv.ParseUint(s[:len(s)-1], 0, bits)
	}
	var in seedInput
	g, err := num(lines[1], "uint32", 32)
	if err != nil {
		return in, err
	}
	c, err := num(lines[2], "uint16", 16)
	if err != nil {
		return in, err
	}
	v, err := num(lines[3], "uint16", 16)
	if err != nil {
		return in, err
	}
	p, err := num(lines[4], "uint8", 8)
	if err != nil {
		return in, err
	}
	q, ok := strings.CutPrefix(lines[5], "[]byte(")
	if !ok || !strings.HasSuffix(q, ")") {
		return in, fmt.Errorf("%q is not a []byte", lines[5])
	}
	data, err := strconv.Unquote(q[:len(q)-1])
	if err != nil {
		return in, fmt.Errorf("%q: %v", lines[5], err)
	}
	return seedInput{guid1: uint32(g), code: uint16(c), version: uint16(v), ptr: uint8(p), data: []byte(data)}, nil
}

// realSeed is a seed of a real payload and the kind it decodes to.
type realSeed struct {
	key  Key
	data []byte
	kind Kind
}

// realSeeds are the payloads of the records the stack and identity
// paths read, for both pointer sizes, as Windows and iotrace's own
// provider write them.
func realSeeds() []realSeed {
	var out []realSeed
	le := binary.LittleEndian
	for _, ptr := range []uint8{4, 8} {
		addr := func(b []byte, v uint64) []byte {
			if ptr == 4 {
				return le.AppendUint32(b, uint32(v))
			}
			return le.AppendUint64(b, v)
		}
		kbase, ubase := uint64(0xfffff80021489000), uint64(0x7ff6a0001000)
		if ptr == 4 {
			kbase, ubase = 0x82000000, 0x00401000
		}
		frames := func(b []byte) []byte { return addr(addr(addr(b, kbase+0x1ba7ab), kbase+0x2c10), ubase+0x42) }
		ref := func(b []byte) []byte { // EventTimeStamp, StackProcess, StackThread
			return le.AppendUint32(le.AppendUint32(le.AppendUint64(b, 28617000), 1234), 5678)
		}
		sw := func(code uint16, kind Kind, data []byte) {
			out = append(out, realSeed{Key{ClassStackWalk, code, 2, ptr}, data, kind})
		}
		sw(OpcodeStack, KindStack, frames(ref(nil)))
		for _, code := range []uint16{OpcodeStackKeyCreate, OpcodeStackKeyDelete, OpcodeStackKeyRundwn} {
			sw(code, KindStackKeyDef, frames(addr(nil, kbase+0x7f0040)))
		}
		for _, code := range []uint16{OpcodeStackKeyKernel, OpcodeStackKeyUser} {
			sw(code, KindStackKeyRef, addr(ref(nil), kbase+0x7f0040))
		}
		id := addr(addr(nil, kbase), 7634944)
		id = le.AppendUint32(le.AppendUint32(id, 0), 1343269963)
		id = ownprovider.AppendWString(id, "ntkrnlmp.exe")
		out = append(out, realSeed{Key{ClassImageID, OpcodeImageID, 2, ptr}, id, KindImageID})
		rsds := le.AppendUint32(addr(nil, kbase), 0)
		rsds = append(rsds, 0x00, 0x21, 0x48, 0x72, 0x1c, 0x1c, 0x03, 0x4a, 0xae, 0xd8, 0xc4, 0xc7, 0x1c, 0x2e, 0x8d, 0x1d)
		rsds = append(le.AppendUint32(rsds, 2), "ntkrnlmp.pdb\x00"...)
		out = append(out, realSeed{Key{ClassImageID, OpcodeImageDbgIDRSDS, 2, ptr}, rsds, KindImageDbgID})
		own := func(code uint16, kind Kind, data []byte) {
			out = append(out, realSeed{Key{ClassOwn, code, ownprovider.Version, ptr}, data, kind})
		}
		own(ownprovider.OpcodeMarker, KindOwnMarker, ownprovider.Marker("phase 2"))
		own(ownprovider.OpcodeVolume, KindOwnVolume, (&ownprovider.Volume{NtPath: `\Device\HarddiskVolume3`, DosPath: "C:"}).Encode())
		own(ownprovider.OpcodeImage, KindOwnImage, (&ownprovider.Image{Base: kbase, Size: 7634944, TimeDateStamp: 1343269963,
			CheckSum: 0x6aa6c8, Age: 2, PdbGUID: record.GUID{Data1: 0x72482100, Data2: 0x1c1c, Data3: 0x4a03,
				Data4: [8]byte{0xae, 0xd8, 0xc4, 0xc7, 0x1c, 0x2e, 0x8d, 0x1d}},
			FileName: `\SystemRoot\system32\ntoskrnl.exe`, PdbName: "ntkrnlmp.pdb"}).Encode())
	}
	return out
}

// TestWriteFuzzDecodeSeeds: the corpus holds the seeds of real payloads
// as realSeeds writes them (go test -run TestWriteFuzzDecodeSeeds
// -write-corpus rewrites them).
func TestWriteFuzzDecodeSeeds(t *testing.T) {
	for _, s := range realSeeds() {
		in := seedInput{guid1: classGUID[s.key.Class].Data1, code: s.key.Code, version: s.key.Version, ptr: s.key.PtrSize, data: s.data}
		path := filepath.Join(seedDir, seedName(s.key))
		if *writeCorpus {
			if err := os.WriteFile(path, in.encode(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("seed of %v: %v (go test -run TestWriteFuzzDecodeSeeds -write-corpus writes it)", s.key, err)
			continue
		}
		if !bytes.Equal(b, in.encode()) {
			t.Errorf("seed %s differs from what realSeeds writes (-write-corpus rewrites it)", path)
		}
	}
}

// TestFuzzDecodeSeeds: every seed reaches the decoder it is named for;
// the seeds of real payloads decode without error to their kind.
func TestFuzzDecodeSeeds(t *testing.T) {
	seen := map[uint32]Class{}
	for c := ClassEventTrace; c < numClasses; c++ {
		if o, dup := seen[classGUID[c].Data1]; dup {
			t.Fatalf("classes %v and %v share their GUID's first 32 bits: fuzzKey cannot tell them apart", o, c)
		}
		seen[classGUID[c].Data1] = c
	}
	kinds := map[Key]Kind{}
	for _, s := range realSeeds() {
		kinds[s.key] = s.kind
	}
	keys := allKeys()
	ents, err := os.ReadDir(seedDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) < len(kinds) {
		t.Fatalf("%d seeds, fewer than the %d real payloads", len(ents), len(kinds))
	}
	for _, e := range ents {
		want, err := parseSeedName(e.Name())
		if err != nil {
			t.Error(err)
			continue
		}
		b, err := os.ReadFile(filepath.Join(seedDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		in, err := parseSeed(b)
		if err != nil {
			t.Errorf("%s: %v", e.Name(), err)
			continue
		}
		k := fuzzKey(keys, in.guid1, in.code, in.version, in.ptr)
		if k != want {
			t.Errorf("%s reaches the decoder of %v", e.Name(), k)
			continue
		}
		var ev Event
		ok, err := NewDecoder().Decode(recordFor(k, in.data), &ev)
		if !ok {
			t.Errorf("%s: no decoder for %v", e.Name(), k)
			continue
		}
		if kind, real := kinds[k]; real && e.Name() == seedName(k) && (err != nil || ev.Kind != kind) {
			t.Errorf("%s: kind %v, error %v; want kind %v", e.Name(), ev.Kind, err, kind)
		}
	}
}

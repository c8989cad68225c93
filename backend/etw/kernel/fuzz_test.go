package kernel

import (
	"sort"
	"testing"

	"github.com/iotrace/iotrace/backend/etw/record"
)

// allKeys lists every decoder key in a stable order.
func allKeys() []Key {
	keys := make([]Key, 0, len(defaultTable().exact))
	for pk := range defaultTable().exact {
		k := Key{Class: Class(pk >> 40), Code: uint16(pk >> 24), Version: uint16(pk >> 8), PtrSize: uint8(pk)}
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keyLess(keys[i], keys[j]) })
	return keys
}

func recordFor(k Key, data []byte) *record.Record {
	r := &record.Record{Version: k.Version, PointerSize: int(k.PtrSize), UserData: data}
	switch k.Class {
	case ClassKernelFile, ClassKernelProcess:
		r.Kind, r.Provider, r.ID = record.KindEvent, classGUID[k.Class], k.Code
	case ClassSysConfig, ClassImageID, ClassOwn:
		r.Kind, r.Provider, r.Opcode = record.KindClassic, classGUID[k.Class], uint8(k.Code)
	default:
		r.Kind, r.Opcode = record.KindSystem, uint8(k.Code)
		for g, c := range groupClass {
			if c == k.Class {
				r.Group = uint8(g)
				break
			}
		}
	}
	return r
}

// keyLess orders keys as allKeys lists them.
func keyLess(a, b Key) bool {
	if a.Class != b.Class {
		return a.Class < b.Class
	}
	if a.Code != b.Code {
		return a.Code < b.Code
	}
	if a.Version != b.Version {
		return a.Version < b.Version
	}
	return a.PtrSize < b.PtrSize
}

// classOfData1 returns the class whose GUID begins with d1 (the GUIDs'
// first 32 bits differ, see classByData1), or false.
func classOfData1(d1 uint32) (Class, bool) {
	for c := ClassEventTrace; c < numClasses; c++ {
		if classGUID[c].Data1 == d1 {
			return c, true
		}
	}
	return ClassUnknown, false
}

// fuzzKey returns the decoder a fuzz input names: the class by the first
// 32 bits of its GUID (guid1: stable, unlike the Class numbers or a
// position in the table), the opcode or event id, the version and the
// pointer size. A key with a decoder is taken as it is, whatever other
// decoders are added; any other input lands on the next key in allKeys'
// order (of a class picked by guid1 when guid1 names none), so that
// mutations still reach every decoder.
func fuzzKey(keys []Key, guid1 uint32, code, version uint16, ptr uint8) Key {
	c, ok := classOfData1(guid1)
	if !ok {
		c = ClassEventTrace + Class(guid1%uint32(numClasses-ClassEventTrace))
	}
	want := Key{Class: c, Code: code, Version: version, PtrSize: ptr}
	i := sort.Search(len(keys), func(i int) bool { return !keyLess(keys[i], want) })
	if i == len(keys) {
		i = 0
	}
	return keys[i]
}

// FuzzDecode runs every decoder on arbitrary payloads: it must never
// panic, and decoded strings must lie inside the payload. The input names
// its decoder by class GUID (first 32 bits), code, version and pointer
// size (fuzzKey), so the seeds in testdata/fuzz/FuzzDecode, named
// CLASS_CODE_vVERSION_pPTRSIZE, keep reaching their decoder
// (TestFuzzDecodeSeeds) when decoders are added; write-corpus rewrites
// the seeds of real payloads (TestWriteFuzzDecodeSeeds).
func FuzzDecode(f *testing.F) {
	keys := allKeys()
	f.Add(uint32(0), uint16(0), uint16(0), uint8(8), []byte{})
	f.Add(classGUID[ClassDiskIo].Data1, uint16(10), uint16(3), uint8(8), make([]byte, 52))
	f.Fuzz(func(t *testing.T, guid1 uint32, code, version uint16, ptr uint8, data []byte) {
		k := fuzzKey(keys, guid1, code, version, ptr)
		r := recordFor(k, data)
		if got := KeyOf(r); got != k {
			t.Fatalf("record for %v has key %v", k, got)
		}
		var ev Event
		ok, err := NewDecoder().Decode(r, &ev)
		if !ok {
			t.Fatalf("no decoder for %v", k)
		}
		// The fast paths agree with the table's decoders.
		switch k.Class {
		case ClassStackWalk:
			sw, ok2, err2 := DecodeStackWalk(r)
			if !ok2 || (err2 == nil) != (err == nil) || err == nil && (sw.StackTime != ev.StackTime ||
				sw.Tid != ev.Tid || sw.StackKey != ev.StackKey || sw.Frames.Len() != ev.Frames.Len()) {
				t.Fatalf("%v: DecodeStackWalk %+v %v, Decode %v", k, sw, err2, err)
			}
		case ClassImageID:
			im, ok2, err2 := DecodeImageID(r)
			if !ok2 || (err2 == nil) != (err == nil) || err == nil && (im.ImageBase != ev.ImageBase ||
				string(im.PdbName) != string(ev.PdbName) || im.TimeDateStamp != ev.TimeDateStamp) {
				t.Fatalf("%v: DecodeImageID %+v %v, Decode %v", k, im, err2, err)
			}
		}
		if err != nil {
			if _, isField := err.(*FieldError); !isField {
				t.Fatalf("%v: error %T %v, want *FieldError", k, err, err)
			}
			_ = err.Error()
			return
		}
		if n := ev.Frames.Len(); n > 0 {
			if n*ev.Frames.PtrSize() > len(data) {
				t.Fatalf("%v: frames beyond the payload", k)
			}
			_ = ev.Frames.At(n - 1)
		}
		for _, s := range [][]byte{ev.Name, ev.Name2, ev.ImageFileName, ev.PdbName} {
			if len(s) > len(data) {
				t.Fatalf("%v: string longer than the payload", k)
			}
		}
		_ = ev.Name.String()
		_ = ev.Name2.String()
		_ = ev.ImageFileName.String()
	})
}

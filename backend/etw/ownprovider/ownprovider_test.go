package ownprovider

import (
	"errors"
	"testing"

	"github.com/iotrace/iotrace/backend/etw/record"
)

func TestRoundTrip(t *testing.T) {
	v := Volume{NtPath: `\Device\HarddiskVolume3`, DosPath: "C:"}
	got, err := DecodeVolume(v.Encode())
	if err != nil || got != v {
		t.Fatalf("volume: got %+v, %v; want %+v", got, err, v)
	}
	im := Image{Base: 0xfffff80021489000, Size: 7634944, ProcessID: 4, TimeDateStamp: 1343269963,
		CheckSum: 0x6a1f2b, Age: 2, PdbGUID: record.GUID{Data1: 0x72482100, Data2: 0x1c1c, Data3: 0x4a03, Data4: [8]byte{0xa1, 2, 3, 4, 5, 6, 7, 8}},
		FileName: `\SystemRoot\system32\ntoskrnl.exe`, PdbName: "ntkrnlmp.pdb"}
	gi, err := DecodeImage(im.Encode())
	if err != nil || gi != im {
		t.Fatalf("image: got %+v, %v; want %+v", gi, err, im)
	}
	if !gi.HasPDB() || (&Image{}).HasPDB() {
		t.Error("HasPDB")
	}
	if s := DecodeMarker(Marker("phase 2 — ünïcode")); s != "phase 2 — ünïcode" {
		t.Errorf("marker %q", s)
	}
	if s := DecodeMarker([]byte{'a', 0, 'b', 0, 'c'}); s != "ab" {
		t.Errorf("marker without NUL: %q", s)
	}
}

func TestTruncated(t *testing.T) {
	im := Image{FileName: "a.dll", PdbName: "a.pdb"}
	b := im.Encode()
	for n := 0; n < len(b); n++ {
		if _, err := DecodeImage(b[:n]); !errors.Is(err, errShort) {
			t.Fatalf("image cut at %d: err %v", n, err)
		}
	}
	v := Volume{NtPath: "x", DosPath: "C:"}
	b = v.Encode()
	for n := 0; n < len(b); n++ {
		if _, err := DecodeVolume(b[:n]); !errors.Is(err, errShort) {
			t.Fatalf("volume cut at %d: err %v", n, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	im := Image{Base: 1, FileName: "a", PdbName: "b"}
	f.Add(im.Encode())
	v := Volume{NtPath: "n", DosPath: "d"}
	f.Add(v.Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		if im, err := DecodeImage(b); err == nil {
			if again, err := DecodeImage(im.Encode()); err != nil || again != im {
				t.Fatalf("image re-encode: %+v %v", again, err)
			}
		}
		if v, err := DecodeVolume(b); err == nil {
			if again, err := DecodeVolume(v.Encode()); err != nil || again != v {
				t.Fatalf("volume re-encode: %+v %v", again, err)
			}
		}
		DecodeMarker(b)
	})
}

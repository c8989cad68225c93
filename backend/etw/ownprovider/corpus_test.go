package ownprovider

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/iotrace/iotrace/backend/etw/record"
)

var writeCorpus = flag.Bool("write-corpus", false, "rewrite FuzzDecode's seeds in testdata/fuzz/FuzzDecode")

// seed is a corpus file of FuzzDecode: a payload the encoder writes and
// what it decodes to.
type seed struct {
	name   string
	data   []byte
	image  *Image
	volume *Volume
	marker string
}

// seeds are the events iotrace's provider logs: images of the kernel, a
// driver and a user program (with and without a PDB identity), volumes
// and markers.
func seeds() []seed {
	nt := Image{Base: 0xfffff80021489000, Size: 7634944, TimeDateStamp: 1343269963, CheckSum: 0x6aa6c8, Age: 2,
		PdbGUID:  record.GUID{Data1: 0x72482100, Data2: 0x1c1c, Data3: 0x4a03, Data4: [8]byte{0xae, 0xd8, 0xc4, 0xc7, 0x1c, 0x2e, 0x8d, 0x1d}},
		FileName: `\SystemRoot\system32\ntoskrnl.exe`, PdbName: "ntkrnlmp.pdb"}
	app := Image{Base: 0x7ff6a0000000, Size: 0x23000, ProcessID: 4812, TimeDateStamp: 0x6b068fb8, CheckSum: 0x2f1d4, Age: 1,
		PdbGUID:  record.GUID{Data1: 0x733a9591, Data2: 0xc6c2, Data3: 0x94e5, Data4: [8]byte{0x4c, 0x4c, 0x44, 0x20, 0x50, 0x44, 0x42, 0x2e}},
		FileName: `C:\Program Files\Ünïcode App\app.exe`, PdbName: `D:\build\obj\app.pdb`}
	noPDB := Image{Base: 0xfffff8002141d000, Size: 442368, TimeDateStamp: 1343269864, FileName: `\SystemRoot\system32\drivers\x.sys`}
	vol := Volume{NtPath: `\Device\HarddiskVolume3`, DosPath: "C:"}
	share := Volume{NtPath: `\Device\Mup\server\share`, DosPath: "Z:"}
	return []seed{
		{name: "image_ntoskrnl", data: nt.Encode(), image: &nt},
		{name: "image_user", data: app.Encode(), image: &app},
		{name: "image_nopdb", data: noPDB.Encode(), image: &noPDB},
		{name: "volume", data: vol.Encode(), volume: &vol},
		{name: "volume_unc", data: share.Encode(), volume: &share},
		{name: "marker", data: Marker("phase 2"), marker: "phase 2"},
		{name: "marker_empty", data: Marker(""), marker: ""},
	}
}

func corpusFile(data []byte) []byte { return fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", data) }

// TestFuzzCorpus: testdata/fuzz/FuzzDecode holds the events the encoder
// writes (go test -run TestFuzzCorpus -write-corpus rewrites them), and
// each decodes to what was encoded.
func TestFuzzCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
	if *writeCorpus {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range seeds() {
		path := filepath.Join(dir, s.name)
		if *writeCorpus {
			if err := os.WriteFile(path, corpusFile(s.data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("seed %s: %v (go test -run TestFuzzCorpus -write-corpus writes it)", s.name, err)
			continue
		}
		if !bytes.Equal(b, corpusFile(s.data)) {
			t.Errorf("seed %s differs from what the encoder writes (-write-corpus rewrites it)", path)
		}
		switch {
		case s.image != nil:
			if im, err := DecodeImage(s.data); err != nil || im != *s.image {
				t.Errorf("%s: %+v %v", s.name, im, err)
			}
		case s.volume != nil:
			if v, err := DecodeVolume(s.data); err != nil || v != *s.volume {
				t.Errorf("%s: %+v %v", s.name, v, err)
			}
		default:
			if m := DecodeMarker(s.data); m != s.marker {
				t.Errorf("%s: %q", s.name, m)
			}
		}
	}
}

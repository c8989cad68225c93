package unwind

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/internal/testenv"
)

// debianFiles are binaries of the system the tests run on (Debian 12 in
// CI): C (glibc, the dynamic loader, git), C++ (libstdc++), a big
// interpreter (python3).
var debianFiles = []string{
	"/lib/x86_64-linux-gnu/libc.so.6",
	"/lib64/ld-linux-x86-64.so.2",
	"/lib/x86_64-linux-gnu/libstdc++.so.6",
	"/usr/bin/git",
	"/usr/bin/python3",
	"/usr/bin/ls",
}

// interpRow is one row of readelf's frames-interp output, the columns
// tables keep.
type interpRow struct {
	loc         uint64
	cfa, fp, ra string
}

// readelfRows runs readelf --debug-dump=frames-interp on path and
// returns, for each FDE (by its pc range), its rows; an FDE listed
// without rows has its CIE's.
func readelfRows(t *testing.T, path string) map[[2]uint64][]interpRow {
	t.Helper()
	readelf := testenv.Tool(t, "readelf")
	out, err := exec.Command(readelf, "--debug-dump=no-follow-links", "--debug-dump=frames-interp", path).Output()
	if err != nil {
		t.Fatalf("readelf %s: %v", path, err)
	}
	type block struct {
		cie  string // the CIE's offset, or an FDE's CIE
		fde  bool
		pc   [2]uint64
		rows []interpRow
	}
	var blocks []*block
	var cols []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		// "r10 (r10)": a register rule's column, one field.
		f := strings.Fields(regName.ReplaceAllString(sc.Text(), "$1"))
		switch {
		case len(f) >= 4 && f[3] == "CIE":
			blocks = append(blocks, &block{cie: f[0]})
			cols = nil
		case len(f) >= 5 && f[3] == "FDE":
			b := &block{fde: true}
			for _, x := range f[4:] {
				if v, ok := strings.CutPrefix(x, "pc="); ok {
					lo, hi, _ := strings.Cut(v, "..")
					b.pc[0], _ = strconv.ParseUint(lo, 16, 64)
					b.pc[1], _ = strconv.ParseUint(hi, 16, 64)
				}
				if v, ok := strings.CutPrefix(x, "cie="); ok {
					b.cie = v
				}
			}
			blocks = append(blocks, b)
			cols = nil
		case len(f) >= 2 && f[0] == "LOC" && f[1] == "CFA":
			cols = f
		case len(f) >= 2 && len(f[0]) == 16 && cols != nil && len(blocks) > 0:
			loc, err := strconv.ParseUint(f[0], 16, 64)
			if err != nil {
				continue
			}
			r := interpRow{loc: loc, cfa: f[1], fp: "s", ra: "?"}
			for i := 2; i < len(cols) && i < len(f); i++ {
				switch cols[i] {
				case "rbp":
					r.fp = f[i]
				case "ra":
					r.ra = f[i]
				}
			}
			b := blocks[len(blocks)-1]
			b.rows = append(b.rows, r)
		}
	}
	cies := map[string][]interpRow{}
	for _, b := range blocks {
		if !b.fde {
			cies[b.cie] = b.rows
		}
	}
	fdes := map[[2]uint64][]interpRow{}
	for _, b := range blocks {
		if !b.fde {
			continue
		}
		rows := b.rows
		if len(rows) == 0 {
			for _, r := range cies[b.cie] {
				r.loc = b.pc[0]
				rows = append(rows, r)
			}
		}
		fdes[b.pc] = rows
	}
	return fdes
}

var regName = regexp.MustCompile(`(r[0-9]+) \([a-z0-9]+\)`)

// matches reports whether rule r is what readelf's row says, for the
// columns tables keep.
func (want interpRow) matches(r Rule) error {
	switch {
	case want.ra == "u":
		if r.CFA != CFAStop {
			return fmt.Errorf("ra undefined: want a stop, got %v", r)
		}
		return nil
	case want.ra != "c-8" && want.ra != "exp":
		// The return address in a register: not walkable.
		if r.CFA != CFAUnsupported {
			return fmt.Errorf("ra %s: want unsupported, got %v", want.ra, r)
		}
		return nil
	}
	switch {
	case strings.HasPrefix(want.cfa, "rsp+"), strings.HasPrefix(want.cfa, "rsp-"):
		n, _ := strconv.Atoi(want.cfa[3:])
		if r.CFA != CFASP || int(r.CFAOff) != n {
			return fmt.Errorf("CFA %s, got %v", want.cfa, r)
		}
	case strings.HasPrefix(want.cfa, "rbp+"), strings.HasPrefix(want.cfa, "rbp-"):
		n, _ := strconv.Atoi(want.cfa[3:])
		if r.CFA != CFAFP || int(r.CFAOff) != n {
			return fmt.Errorf("CFA %s, got %v", want.cfa, r)
		}
	case want.cfa == "exp":
		if r.CFA == CFASP || r.CFA == CFAFP || r.CFA == CFANone {
			return fmt.Errorf("CFA exp, got %v", r)
		}
		return nil // the expression's meaning is checked by the unit tests
	default:
		if r.CFA != CFAUnsupported {
			return fmt.Errorf("CFA %s (an untracked register), got %v", want.cfa, r)
		}
		return nil
	}
	if want.ra == "c-8" && (r.RA != RegAtCFA || r.RAOff != -8) {
		return fmt.Errorf("ra c-8, got %v", r)
	}
	switch {
	case want.fp == "s" || want.fp == "u":
		if r.FP != RegSame && r.FP != RegUnknown {
			return fmt.Errorf("rbp %s, got %v", want.fp, r)
		}
	case strings.HasPrefix(want.fp, "c-") || strings.HasPrefix(want.fp, "c+"):
		n, _ := strconv.Atoi(want.fp[1:])
		if r.FP != RegAtCFA || int(r.FPOff) != n {
			return fmt.Errorf("rbp %s, got %v", want.fp, r)
		}
	default:
		if r.FP != RegUnknown && r.FP != RegAtSP && r.FP != RegAtFP {
			return fmt.Errorf("rbp %s, got %v", want.fp, r)
		}
	}
	return nil
}

// TestTablesMatchReadelf: the table built from each Debian binary gives,
// at every address readelf's frames-interp lists a row for, the rule
// readelf shows (CFA, rbp, return address), the row before holding up to
// the next; addresses no FDE covers have no CFI; fewer than 0.1 % of the
// FDEs are left out (overlapping or outside the code).
func TestTablesMatchReadelf(t *testing.T) {
	for _, path := range debianFiles {
		t.Run(path, func(t *testing.T) {
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("%s: %v (a Debian system's file)", path, err)
			}
			f, err := elf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tab, err := Build(f)
			if err != nil {
				t.Fatal(err)
			}
			code := execSegments(f)
			fdes := readelfRows(t, path)
			if tab.FDEs == 0 || len(fdes) == 0 {
				t.Fatalf("%d FDEs in the table, %d from readelf", tab.FDEs, len(fdes))
			}
			var bad, checked int
			for key, rows := range fdes {
				start, end, ok := fileOffsets(code, key[0], key[1])
				if !ok {
					continue
				}
				if tab.Lookup(start).CFA == CFANone {
					bad++
					continue
				}
				for i, row := range rows {
					off := row.loc - key[0] + start
					if err := row.matches(tab.Lookup(off)); err != nil {
						t.Errorf("FDE %#x..%#x at %#x: %v", key[0], key[1], row.loc, err)
					}
					next := end
					if i+1 < len(rows) {
						next = rows[i+1].loc - key[0] + start
					}
					if next > off+1 {
						if err := row.matches(tab.Lookup(next - 1)); err != nil {
							t.Errorf("FDE %#x..%#x at %#x (before the next row): %v", key[0], key[1], next-1+key[0]-start, err)
						}
					}
					checked++
				}
			}
			if bad*1000 > len(fdes) {
				t.Errorf("%d of %d FDEs left out", bad, len(fdes))
			}
			t.Logf("%s: %d FDEs, %d rows checked, %d table rows (%d rules), %d left out", path, len(fdes), checked, len(tab.Rows), len(tab.Rules()), bad)
		})
	}
}

package unwind

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// The table file format (MarshalBinary, version 1), little endian:
//
//	magic "IOTUNW01", arch u8, kind u8, reserved u16, FDEs u32, bad u32
//	rules: count u32, then each: cfa u8, threshold u8, signal u8, fp u8,
//	       ra u8, 3 zero bytes, cfa offset i32, fp offset i32, ra offset i32
//	rows:  count u32, then each: file offset u64, rule index u32
//	SHA-256 of everything before it
//
// A table read back is checked whole (UnmarshalBinary): a cache file is
// data, not trusted.

const (
	tableMagic = "IOTUNW01"
	ruleSize   = 20
	rowSize    = 12
	headerSize = len(tableMagic) + 12
)

// MarshalBinary encodes the table.
func (t *Table) MarshalBinary() ([]byte, error) {
	rules := t.Rules()
	index := make(map[Rule]uint32, len(rules))
	for i, r := range rules {
		index[r] = uint32(i)
	}
	if len(t.Rows) > math.MaxUint32 || t.FDEs < 0 || t.Bad < 0 || t.FDEs > math.MaxUint32 || t.Bad > math.MaxUint32 {
		return nil, errors.New("unwind: table too large to encode")
	}
	b := make([]byte, 0, headerSize+8+len(rules)*ruleSize+len(t.Rows)*rowSize+sha256.Size)
	b = append(b, tableMagic...)
	b = append(b, byte(t.Arch), byte(t.Kind), 0, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(t.FDEs))
	b = binary.LittleEndian.AppendUint32(b, uint32(t.Bad))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(rules)))
	for _, r := range rules {
		sig := byte(0)
		if r.Signal {
			sig = 1
		}
		b = append(b, byte(r.CFA), r.Threshold, sig, byte(r.FP), byte(r.RA), 0, 0, 0)
		b = binary.LittleEndian.AppendUint32(b, uint32(r.CFAOff))
		b = binary.LittleEndian.AppendUint32(b, uint32(r.FPOff))
		b = binary.LittleEndian.AppendUint32(b, uint32(r.RAOff))
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(t.Rows)))
	for _, r := range t.Rows {
		b = binary.LittleEndian.AppendUint64(b, r.Off)
		b = binary.LittleEndian.AppendUint32(b, index[r.Rule])
	}
	sum := sha256.Sum256(b)
	return append(b, sum[:]...), nil
}

// UnmarshalBinary decodes a table MarshalBinary wrote, checking its
// checksum and every field.
func (t *Table) UnmarshalBinary(b []byte) error {
	if len(b) < headerSize+8+sha256.Size || !bytes.Equal(b[:len(tableMagic)], []byte(tableMagic)) {
		return errors.New("unwind: not a table file (magic)")
	}
	body, sum := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if s := sha256.Sum256(body); !bytes.Equal(s[:], sum) {
		return errors.New("unwind: table file damaged (checksum)")
	}
	r := &reader{b: body, off: len(tableMagic)}
	nt := Table{Arch: Arch(r.u8()), Kind: Kind(r.u8())}
	r.u16()
	nt.FDEs, nt.Bad = int(r.u32()), int(r.u32())
	if _, ok := archRegs[nt.Arch]; !ok || nt.Kind < KindCFI || nt.Kind > KindNone {
		return fmt.Errorf("unwind: table file: arch %d, kind %d", nt.Arch, nt.Kind)
	}
	nrules := uint64(r.u32())
	if nrules*ruleSize > uint64(len(body)-r.off) {
		return fmt.Errorf("unwind: table file: %d rules past its end", nrules)
	}
	rules := make([]Rule, nrules)
	for i := range rules {
		x := Rule{CFA: CFAKind(r.u8()), Threshold: r.u8()}
		sig := r.u8()
		x.FP, x.RA = RegKind(r.u8()), RegKind(r.u8())
		r.bytes(3)
		x.CFAOff, x.FPOff, x.RAOff = int32(r.u32()), int32(r.u32()), int32(r.u32())
		x.Signal = sig == 1
		if !x.valid() || sig > 1 {
			return fmt.Errorf("unwind: table file: rule %d invalid", i)
		}
		rules[i] = x
	}
	nrows := uint64(r.u32())
	if r.err != nil || nrows*rowSize != uint64(len(body)-r.off) {
		return fmt.Errorf("unwind: table file: %d rows do not fill its %d bytes", nrows, len(body)-r.off)
	}
	nt.Rows = make([]Row, nrows)
	for i := range nt.Rows {
		off, idx := r.u64(), r.u32()
		if uint64(idx) >= nrules {
			return fmt.Errorf("unwind: table file: row %d: rule %d of %d", i, idx, nrules)
		}
		if i > 0 && off <= nt.Rows[i-1].Off {
			return fmt.Errorf("unwind: table file: row %d out of order", i)
		}
		nt.Rows[i] = Row{Off: off, Rule: rules[idx]}
	}
	if r.err != nil {
		return fmt.Errorf("unwind: table file: %w", r.err)
	}
	*t = nt
	return nil
}

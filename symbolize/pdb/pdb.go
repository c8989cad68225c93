package pdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
)

var le = binary.LittleEndian

// msfMagic starts every PDB 7.0 (MSF 7.00) file.
var msfMagic = []byte("Microsoft C/C++ MSF 7.00\r\n\x1aDS\x00\x00\x00")

// Fixed stream numbers.
const (
	streamPDB = 1
	streamDBI = 3
)

// Limits that keep a damaged file from asking for absurd allocations.
const (
	maxStreams   = 1 << 20
	maxFileSize  = 4 << 30
	nilStream    = 0xffffffff
	noStream     = 0xffff
	dbiHeaderLen = 64
	// minSectionAlign: a PE's sections start at multiples of its section
	// alignment, never less than the smallest file alignment, 512.
	minSectionAlign = 512
)

// Symbol is a public symbol at a relative virtual address.
type Symbol struct {
	RVA  uint32
	Name string
	// Function is set for code (CVPSF_FUNCTION).
	Function bool
}

// Section is one section of the module, as the PDB records it.
type Section struct {
	Name           string
	VirtualAddress uint32
	VirtualSize    uint32
	rawSize        uint32 // SizeOfRawData
}

// File is what was read from a PDB.
type File struct {
	// GUID and Age identify the PDB; a module names them in its CodeView
	// (RSDS) debug record. GUID is kept in file order (Data1, Data2 and
	// Data3 little endian).
	GUID [16]byte
	Age  uint32
	// Sections are the module's section headers.
	Sections []Section
	// Publics are the public symbols, sorted by RVA.
	Publics []Symbol
	// OMAP reports that the module was rearranged after linking and the
	// symbols were mapped through its OMAP table.
	OMAP bool
}

// msf is an open MSF container.
type msf struct {
	r         io.ReaderAt
	size      int64
	blockSize uint32
	sizes     []uint32
	blocks    [][]uint32
}

// Parse reads a PDB of size bytes from r.
func Parse(r io.ReaderAt, size int64) (*File, error) {
	m, err := openMSF(r, size)
	if err != nil {
		return nil, err
	}
	f := &File{}
	info, err := m.stream(streamPDB)
	if err != nil {
		return nil, err
	}
	if len(info) < 28 {
		return nil, fmt.Errorf("pdb: information stream (1) of %d bytes, want at least 28", len(info))
	}
	f.Age = le.Uint32(info[8:])
	copy(f.GUID[:], info[12:28])

	dbi, err := m.stream(streamDBI)
	if err != nil {
		return nil, err
	}
	h, err := parseDBIHeader(dbi)
	if err != nil {
		return nil, err
	}
	if h.symRecords == noStream {
		return nil, errors.New("pdb: the DBI stream names no symbol record stream")
	}
	sectStream := h.dbg[dbgSectionHdr]
	omapFrom := h.dbg[dbgOmapFromSrc]
	if omapFrom != noStream {
		// Symbols are in the original (pre-rearrangement) layout: place
		// them with the original section headers, then map.
		if orig := h.dbg[dbgSectionHdrOrig]; orig != noStream {
			sectStream = orig
		}
	}
	if sectStream == noStream {
		return nil, errors.New("pdb: the DBI stream names no section header stream")
	}
	sb, err := m.stream(int(sectStream))
	if err != nil {
		return nil, err
	}
	layout, err := parseSections(sb)
	if err != nil {
		return nil, fmt.Errorf("pdb: section header stream (%d): %w", sectStream, err)
	}
	f.Sections = layout
	var omap []omapEntry
	if omapFrom != noStream {
		ob, err := m.stream(int(omapFrom))
		if err != nil {
			return nil, err
		}
		if omap, err = parseOMAP(ob); err != nil {
			return nil, fmt.Errorf("pdb: OMAP stream (%d): %w", omapFrom, err)
		}
		f.OMAP = true
		if final := h.dbg[dbgSectionHdr]; final != noStream && final != sectStream {
			fb, err := m.stream(int(final))
			if err != nil {
				return nil, err
			}
			if f.Sections, err = parseSections(fb); err != nil {
				return nil, fmt.Errorf("pdb: section header stream (%d): %w", final, err)
			}
		}
	}
	recs, err := m.stream(int(h.symRecords))
	if err != nil {
		return nil, err
	}
	var pubs []byte
	if h.publics != noStream {
		if pubs, err = m.stream(int(h.publics)); err != nil {
			return nil, err
		}
	}
	if f.Publics, err = parsePublics(recs, pubs, layout, omap); err != nil {
		return nil, fmt.Errorf("pdb: public symbols (record stream %d, publics stream %d): %w", h.symRecords, h.publics, err)
	}
	return f, nil
}

func openMSF(r io.ReaderAt, size int64) (*msf, error) {
	if size > maxFileSize {
		return nil, fmt.Errorf("pdb: file of %d bytes is larger than the %d this reader takes", size, int64(maxFileSize))
	}
	var sb [56]byte
	if size < int64(len(sb)) {
		return nil, fmt.Errorf("pdb: file of %d bytes is too short for an MSF superblock", size)
	}
	if _, err := r.ReadAt(sb[:], 0); err != nil {
		return nil, fmt.Errorf("pdb: read superblock: %w", err)
	}
	if !bytes.Equal(sb[:32], msfMagic) {
		return nil, errors.New("pdb: not a PDB 7.0 file (no MSF 7.00 magic at offset 0)")
	}
	m := &msf{r: r, size: size, blockSize: le.Uint32(sb[32:])}
	numBlocks := le.Uint32(sb[40:])
	dirBytes := le.Uint32(sb[44:])
	mapAddr := le.Uint32(sb[52:])
	switch m.blockSize {
	case 512, 1024, 2048, 4096, 8192, 16384, 32768:
	default:
		return nil, fmt.Errorf("pdb: superblock at offset 0x20: block size %d is not a power of two from 512 to 32768", m.blockSize)
	}
	if int64(numBlocks)*int64(m.blockSize) > size {
		return nil, fmt.Errorf("pdb: superblock at offset 0x28: %d blocks of %d bytes, the file has %d bytes (truncated?)", numBlocks, m.blockSize, size)
	}
	// The directory's blocks are listed in the block at mapAddr.
	nDirBlocks := (uint64(dirBytes) + uint64(m.blockSize) - 1) / uint64(m.blockSize)
	if nDirBlocks*4 > uint64(m.blockSize) {
		return nil, fmt.Errorf("pdb: superblock at offset 0x2c: stream directory of %d bytes needs more than one block map block", dirBytes)
	}
	mapBlock, err := m.block(mapAddr)
	if err != nil {
		return nil, fmt.Errorf("pdb: directory block map: %w", err)
	}
	dirBlocks := make([]uint32, nDirBlocks)
	for i := range dirBlocks {
		dirBlocks[i] = le.Uint32(mapBlock[4*i:])
	}
	distinct := newBlockSet(numBlocks)
	if err := distinct.check(dirBlocks); err != nil {
		return nil, fmt.Errorf("pdb: stream directory: %w", err)
	}
	dir, err := m.read(dirBlocks, dirBytes)
	if err != nil {
		return nil, fmt.Errorf("pdb: stream directory: %w", err)
	}
	if len(dir) < 4 {
		return nil, errors.New("pdb: empty stream directory")
	}
	n := le.Uint32(dir)
	if n > maxStreams || uint64(n)*4+4 > uint64(len(dir)) {
		return nil, fmt.Errorf("pdb: stream directory of %d bytes cannot hold %d streams", len(dir), n)
	}
	m.sizes = make([]uint32, n)
	m.blocks = make([][]uint32, n)
	off := 4 + 4*uint64(n)
	for i := range m.sizes {
		m.sizes[i] = le.Uint32(dir[4+4*i:])
	}
	for i, sz := range m.sizes {
		if sz == nilStream {
			continue
		}
		nb := (uint64(sz) + uint64(m.blockSize) - 1) / uint64(m.blockSize)
		if off+nb*4 > uint64(len(dir)) {
			return nil, fmt.Errorf("pdb: stream directory at offset %#x: the blocks of stream %d (%d bytes) run past its end (%d bytes)", off, i, sz, len(dir))
		}
		bl := make([]uint32, nb)
		for j := range bl {
			bl[j] = le.Uint32(dir[off+4*uint64(j):])
		}
		if err := distinct.check(bl); err != nil {
			return nil, fmt.Errorf("pdb: stream directory at offset %#x: stream %d (%d bytes): %w", off, i, sz, err)
		}
		m.blocks[i] = bl
		off += nb * 4
	}
	return m, nil
}

// blockSet checks a stream's block list: every block one of the file's,
// none listed twice. A stream's size is then bounded by its distinct
// blocks, so by the file: a block listed many times cannot make a small
// file claim gigabytes.
type blockSet struct {
	n    uint32
	bits []uint64
}

func newBlockSet(numBlocks uint32) *blockSet {
	return &blockSet{n: numBlocks, bits: make([]uint64, (uint64(numBlocks)+63)/64)}
}

// check checks one stream's blocks, and leaves the set empty again.
func (s *blockSet) check(blocks []uint32) error {
	var err error
	k := 0
	for ; k < len(blocks); k++ {
		b := blocks[k]
		if b >= s.n {
			err = fmt.Errorf("block %d (entry %d) is not one of the file's %d blocks", b, k, s.n)
			break
		}
		if s.bits[b/64]&(1<<(b%64)) != 0 {
			err = fmt.Errorf("block %d is listed twice (entry %d)", b, k)
			break
		}
		s.bits[b/64] |= 1 << (b % 64)
	}
	for _, b := range blocks[:k] {
		s.bits[b/64] &^= 1 << (b % 64)
	}
	return err
}

// block reads block b.
func (m *msf) block(b uint32) ([]byte, error) {
	off := int64(b) * int64(m.blockSize)
	if off+int64(m.blockSize) > m.size {
		return nil, fmt.Errorf("block %d at offset %#x is past the end of the file (%d bytes)", b, off, m.size)
	}
	buf := make([]byte, m.blockSize)
	if _, err := m.r.ReadAt(buf, off); err != nil {
		return nil, fmt.Errorf("read block %d at offset %#x: %w", b, off, err)
	}
	return buf, nil
}

// read reads size bytes from the blocks listed.
func (m *msf) read(blocks []uint32, size uint32) ([]byte, error) {
	if uint64(size) > uint64(len(blocks))*uint64(m.blockSize) {
		return nil, fmt.Errorf("%d bytes in %d blocks of %d", size, len(blocks), m.blockSize)
	}
	out := make([]byte, 0, size)
	for _, b := range blocks {
		if uint32(len(out)) >= size {
			break
		}
		data, err := m.block(b)
		if err != nil {
			return nil, err
		}
		out = append(out, data[:min(uint32(len(data)), size-uint32(len(out)))]...)
	}
	return out, nil
}

// stream reads stream i whole.
func (m *msf) stream(i int) ([]byte, error) {
	if i < 0 || i >= len(m.sizes) {
		return nil, fmt.Errorf("pdb: stream %d does not exist (the file has %d)", i, len(m.sizes))
	}
	if m.sizes[i] == nilStream {
		return nil, fmt.Errorf("pdb: stream %d is empty", i)
	}
	b, err := m.read(m.blocks[i], m.sizes[i])
	if err != nil {
		return nil, fmt.Errorf("pdb: stream %d: %w", i, err)
	}
	return b, nil
}

// Indexes into the DBI optional debug header (its stream numbers).
const (
	dbgOmapToSrc      = 3
	dbgOmapFromSrc    = 4
	dbgSectionHdr     = 5
	dbgSectionHdrOrig = 10
	numDbg            = 11
)

type dbiHeader struct {
	publics    uint16
	symRecords uint16
	dbg        [numDbg]uint16
}

func parseDBIHeader(b []byte) (dbiHeader, error) {
	h := dbiHeader{}
	for i := range h.dbg {
		h.dbg[i] = noStream
	}
	if len(b) < dbiHeaderLen {
		return h, fmt.Errorf("pdb: DBI stream (3) of %d bytes, want at least %d", len(b), dbiHeaderLen)
	}
	if sig := int32(le.Uint32(b)); sig != -1 {
		return h, fmt.Errorf("pdb: DBI stream (3) at offset 0: signature %d, want -1 (a PDB older than 7.0?)", sig)
	}
	h.publics = le.Uint16(b[16:])
	h.symRecords = le.Uint16(b[20:])
	// Substreams after the header, in order: module info, section
	// contributions, section map, source info, type server map, then the
	// optional debug header after the EC substream.
	var total uint64 = dbiHeaderLen
	for i, at := range []int{24, 28, 32, 36, 40, 52} {
		n := int32(le.Uint32(b[at:]))
		if n < 0 {
			return h, fmt.Errorf("pdb: DBI stream (3) at offset %d: substream %d has a negative size %d", at, i, n)
		}
		total += uint64(n)
	}
	dbgSize := int32(le.Uint32(b[48:]))
	if dbgSize < 0 || total+uint64(dbgSize) > uint64(len(b)) {
		return h, fmt.Errorf("pdb: DBI stream (3) of %d bytes: substreams of %d bytes and a debug header of %d", len(b), total, dbgSize)
	}
	for i := 0; i < numDbg && uint64(2*i+2) <= uint64(dbgSize); i++ {
		h.dbg[i] = le.Uint16(b[total+uint64(2*i):])
	}
	return h, nil
}

// parseSections reads IMAGE_SECTION_HEADERs (40 bytes each).
func parseSections(b []byte) ([]Section, error) {
	if len(b)%40 != 0 {
		return nil, fmt.Errorf("%d bytes is not a whole number of 40-byte section headers", len(b))
	}
	out := make([]Section, len(b)/40)
	var end uint64
	for i := range out {
		h := b[40*i:]
		name := h[:8]
		if j := bytes.IndexByte(name, 0); j >= 0 {
			name = name[:j]
		}
		out[i] = Section{Name: string(name), VirtualSize: le.Uint32(h[8:]), VirtualAddress: le.Uint32(h[12:]), rawSize: le.Uint32(h[16:])}
		// A linker lays sections out in order, one after another, each
		// at a multiple of the section alignment (at least the file
		// alignment, which is at least 512 bytes).
		if out[i].VirtualAddress%minSectionAlign != 0 {
			return nil, fmt.Errorf("section %d (%q) at offset %#x: virtual address %#x is not a multiple of %d", i+1, out[i].Name, 40*i, out[i].VirtualAddress, minSectionAlign)
		}
		if uint64(out[i].VirtualAddress) < end {
			return nil, fmt.Errorf("section %d (%q) at offset %#x: virtual address %#x overlaps the section before it (which ends at %#x)", i+1, out[i].Name, 40*i, out[i].VirtualAddress, end)
		}
		end = uint64(out[i].VirtualAddress) + uint64(out[i].VirtualSize)
	}
	return out, nil
}

// omapEntry maps addresses from Source (original layout) onwards to
// Target (0: the code was removed).
type omapEntry struct{ source, target uint32 }

func parseOMAP(b []byte) ([]omapEntry, error) {
	if len(b)%8 != 0 {
		return nil, fmt.Errorf("%d bytes is not a whole number of 8-byte entries", len(b))
	}
	out := make([]omapEntry, len(b)/8)
	for i := range out {
		out[i] = omapEntry{le.Uint32(b[8*i:]), le.Uint32(b[8*i+4:])}
		if i > 0 && out[i].source < out[i-1].source {
			return nil, fmt.Errorf("entry %d (source %#x) is out of order", i, out[i].source)
		}
	}
	return out, nil
}

// mapOMAP maps rva through the OMAP table; ok is false for code the
// rearrangement removed or an address before the first entry.
func mapOMAP(t []omapEntry, rva uint32) (uint32, bool) {
	i := sort.Search(len(t), func(i int) bool { return t[i].source > rva }) - 1
	if i < 0 || t[i].target == 0 {
		return 0, false
	}
	return t[i].target + (rva - t[i].source), true
}

// Symbol record kinds and the publics stream's layout.
const (
	sPub32     = 0x110e
	cvpsfFunc  = 0x2
	recHdrSize = 4

	pubHeaderLen = 28         // PSGSIHDR
	gsiHeaderLen = 16         // GSIHashHdr
	gsiSignature = 0xffffffff // GSIHashHdr.verSignature
	gsiVersion   = 0xeffe0000 + 19990810
	hashBuckets  = 4096 // IPHR_HASH
	hrLen        = 8    // a hash record on disk: offset+1, reference count
	hrMemLen     = 12   // a hash record in memory: bucket offsets count these
)

// pub is an S_PUB32 record as read.
type pub struct {
	flags, addr uint32
	seg         uint16
	name        []byte
}

// records walks the symbol record stream: each record's length must land
// on the next record, and every S_PUB32 is decoded, by offset.
func records(b []byte) (map[uint32]pub, error) {
	pubs := map[uint32]pub{}
	for off := 0; off+recHdrSize <= len(b); {
		n := int(le.Uint16(b[off:]))
		if n < 2 || off+2+n > len(b) {
			return nil, fmt.Errorf("record at offset %#x: length %d runs past the stream's end (%d bytes)", off, n, len(b))
		}
		rec := b[off+2 : off+2+n]
		if le.Uint16(rec) == sPub32 {
			if len(rec) < 12 {
				return nil, fmt.Errorf("S_PUB32 record at offset %#x: %d bytes, want at least 12", off, len(rec))
			}
			// The name ends with a NUL, then at most 3 bytes pad the
			// record to 4.
			name := rec[12:]
			j := bytes.IndexByte(name, 0)
			if j < 0 || len(name)-j-1 > 3 {
				return nil, fmt.Errorf("S_PUB32 record at offset %#x: its name does not end with a NUL at the record's end", off)
			}
			name = name[:j]
			pubs[uint32(off)] = pub{flags: le.Uint32(rec[2:]), addr: le.Uint32(rec[6:]), seg: le.Uint16(rec[10:]), name: name}
		}
		off += 2 + n
	}
	return pubs, nil
}

// parsePublics reads the public symbols. With a publics stream (every
// PDB a linker writes has one), the symbols are those of its address
// map, which must list S_PUB32 records in address order, the same
// records as its name hash table, each inside its section: a PDB has no
// checksum, and these cross-checks turn most damage into an error instead
// of a symbol at a wrong address (TestDamageNamesNoOtherSymbol).
func parsePublics(recs, pubStream []byte, sects []Section, omap []omapEntry) ([]Symbol, error) {
	all, err := records(recs)
	if err != nil {
		return nil, err
	}
	var order []uint32 // record offsets, in address order when checked
	if pubStream == nil {
		order = make([]uint32, 0, len(all))
		for off := range all {
			order = append(order, off)
		}
		slices.Sort(order)
	} else if order, err = addrMap(pubStream, all); err != nil {
		return nil, err
	}
	out := make([]Symbol, 0, len(order))
	for _, off := range order {
		p := all[off]
		if p.seg == 0 {
			continue // an absolute symbol: no address in the image
		}
		if int(p.seg) > len(sects) {
			return nil, fmt.Errorf("S_PUB32 %q at offset %#x: section %d, the PDB has %d", p.name, off, p.seg, len(sects))
		}
		s := sects[p.seg-1]
		if p.addr > max(s.VirtualSize, s.rawSize) {
			return nil, fmt.Errorf("S_PUB32 %q at offset %#x: offset %#x past the end of section %d (%#x bytes)", p.name, off, p.addr, p.seg, max(s.VirtualSize, s.rawSize))
		}
		rva := s.VirtualAddress + p.addr
		ok := rva >= s.VirtualAddress // no wrap-around
		if ok && omap != nil {
			rva, ok = mapOMAP(omap, rva)
		}
		if ok {
			out = append(out, Symbol{RVA: rva, Name: string(p.name), Function: p.flags&cvpsfFunc != 0})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].RVA < out[j].RVA })
	return out, nil
}

// addrMap checks the publics stream against the records and returns its
// address map: the S_PUB32 records' offsets sorted by section and offset.
func addrMap(b []byte, all map[uint32]pub) ([]uint32, error) {
	if len(b) < pubHeaderLen+gsiHeaderLen {
		return nil, fmt.Errorf("publics stream of %d bytes, want at least %d", len(b), pubHeaderLen+gsiHeaderLen)
	}
	symHash, mapLen := uint64(le.Uint32(b)), uint64(le.Uint32(b[4:]))
	if pubHeaderLen+symHash+mapLen > uint64(len(b)) || mapLen%4 != 0 {
		return nil, fmt.Errorf("publics stream of %d bytes: a hash table of %d bytes and an address map of %d do not fit", len(b), symHash, mapLen)
	}
	hashed, err := checkHash(b[pubHeaderLen:pubHeaderLen+symHash], all)
	if err != nil {
		return nil, err
	}
	at := pubHeaderLen + symHash
	m := b[at : at+mapLen]
	order := make([]uint32, len(m)/4)
	var prev pub
	for i := range order {
		off := le.Uint32(m[4*i:])
		p, ok := all[off]
		if !ok {
			return nil, fmt.Errorf("publics stream at offset %#x: address map entry %d points at %#x, not at an S_PUB32 record", at+uint64(4*i), i, off)
		}
		if !hashed[off] {
			return nil, fmt.Errorf("publics stream at offset %#x: address map entry %d (%q) is not in the hash table", at+uint64(4*i), i, p.name)
		}
		if i > 0 && (p.seg < prev.seg || p.seg == prev.seg && p.addr < prev.addr) {
			return nil, fmt.Errorf("publics stream at offset %#x: address map entry %d (%q at %d:%#x) comes before the entry before it (%q at %d:%#x)", at+uint64(4*i), i, p.name, p.seg, p.addr, prev.name, prev.seg, prev.addr)
		}
		order[i], prev = off, p
	}
	if len(order) != len(hashed) {
		return nil, fmt.Errorf("publics stream: %d symbols in the address map, %d in the hash table", len(order), len(hashed))
	}
	return order, nil
}

// checkHash checks the publics' name hash table: its buckets in order,
// and every record it lists an S_PUB32, listed once. It returns the
// records listed. (Which bucket a name is in is not checked: the linkers'
// name hashes do not all agree with Microsoft's, and a good PDB must not
// be refused.)
func checkHash(b []byte, all map[uint32]pub) (map[uint32]bool, error) {
	if len(b) < gsiHeaderLen {
		return nil, fmt.Errorf("publics hash table of %d bytes, want at least %d", len(b), gsiHeaderLen)
	}
	if sig, ver := le.Uint32(b), le.Uint32(b[4:]); sig != gsiSignature || ver != gsiVersion {
		return nil, fmt.Errorf("publics hash table: signature %#x version %#x, want %#x %#x", sig, ver, uint32(gsiSignature), uint32(gsiVersion))
	}
	hrSize := uint64(le.Uint32(b[8:]))
	bitmapLen := uint64((hashBuckets + 32) / 32 * 4)
	if hrSize%hrLen != 0 || gsiHeaderLen+hrSize+bitmapLen > uint64(len(b)) {
		return nil, fmt.Errorf("publics hash table of %d bytes: %d bytes of hash records and a bucket bitmap do not fit", len(b), hrSize)
	}
	hr := b[gsiHeaderLen : gsiHeaderLen+hrSize]
	nrec := uint32(hrSize / hrLen)
	bitmap := b[gsiHeaderLen+hrSize : gsiHeaderLen+hrSize+bitmapLen]
	starts := b[gsiHeaderLen+hrSize+bitmapLen:]
	type bucket struct{ hash, first uint32 }
	var buckets []bucket
	for i := uint32(0); i <= hashBuckets; i++ {
		if bitmap[i/8]&(1<<(i%8)) == 0 {
			continue
		}
		k := len(buckets)
		if 4*k+4 > len(starts) {
			return nil, fmt.Errorf("publics hash table: bucket %d has no start (%d bytes of starts)", i, len(starts))
		}
		first := le.Uint32(starts[4*k:])
		if first%hrMemLen != 0 || first/hrMemLen > nrec || k > 0 && first/hrMemLen < buckets[k-1].first {
			return nil, fmt.Errorf("publics hash table: bucket %d starts at %#x, not a record of the %d in order", i, first, nrec)
		}
		buckets = append(buckets, bucket{i, first / hrMemLen})
	}
	listed := make(map[uint32]bool, nrec)
	for k, bk := range buckets {
		end := nrec
		if k+1 < len(buckets) {
			end = buckets[k+1].first
		}
		for j := bk.first; j < end; j++ {
			off := le.Uint32(hr[hrLen*j:]) - 1
			if _, ok := all[off]; !ok {
				return nil, fmt.Errorf("publics hash table: record %d (bucket %d) points at %#x, not at an S_PUB32 record", j, bk.hash, off)
			}
			if listed[off] {
				return nil, fmt.Errorf("publics hash table: record %d (bucket %d) lists %#x a second time", j, bk.hash, off)
			}
			listed[off] = true
		}
	}
	if len(buckets) > 0 && buckets[0].first != 0 {
		return nil, fmt.Errorf("publics hash table: the first bucket starts at record %d, not 0", buckets[0].first)
	}
	return listed, nil
}

// Lookup returns the public symbol that covers rva: the last one at or
// before it, within the same section. ok is false when no symbol does.
func (f *File) Lookup(rva uint32) (sym Symbol, offset uint32, ok bool) {
	i := sort.Search(len(f.Publics), func(i int) bool { return f.Publics[i].RVA > rva }) - 1
	if i < 0 {
		return Symbol{}, 0, false
	}
	s := f.Publics[i]
	sec := f.sectionOf(rva)
	if sec < 0 || f.sectionOf(s.RVA) != sec {
		return Symbol{}, 0, false
	}
	return s, rva - s.RVA, true
}

// sectionOf returns the index of the section holding rva, or -1.
func (f *File) sectionOf(rva uint32) int {
	for i, s := range f.Sections {
		if rva >= s.VirtualAddress && uint64(rva) < uint64(s.VirtualAddress)+uint64(max(s.VirtualSize, 1)) {
			return i
		}
	}
	return -1
}

// SymStoreKey is the directory name a symbol store files this PDB under:
// the GUID as 32 upper-case hex digits (Data1, Data2 and Data3 as
// numbers, then the 8 bytes of Data4), followed by the age in hex.
func SymStoreKey(guid [16]byte, age uint32) string {
	return fmt.Sprintf("%08X%04X%04X%X%X", le.Uint32(guid[0:]), le.Uint16(guid[4:]), le.Uint16(guid[6:]), guid[8:16], age)
}

// GUIDString renders a GUID as {XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}.
func GUIDString(g [16]byte) string {
	return fmt.Sprintf("{%08X-%04X-%04X-%X-%X}", le.Uint32(g[0:]), le.Uint16(g[4:]), le.Uint16(g[6:]), g[8:10], g[10:16])
}

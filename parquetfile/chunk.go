package parquetfile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/encoding/delta"
	"github.com/parquet-go/parquet-go/encoding/rle"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// retryChunks is how many chunks of a column are stored in raw zstd
// blocks after one that zstd shrank by less than a tenth (and written
// plain after one whose dictionary grew too large), before trying again.
// Such columns (bit-packed dictionary indexes without runs, delta-packed
// times) are a third of the bytes, and compressing them was a third of
// zstd's time for nothing.
const retryChunks = 8

// appendRawZstd appends b as a zstd frame of raw (stored) blocks: what a
// compressor emits for data it cannot shrink, without the search. Every
// chunk of a column keeps the codec ZSTD: readers may take one chunk's
// codec for the whole column (parquet-go's does). Format: RFC 8878,
// sections 3.1.1 (frame header: single segment, 4-byte content size, no
// checksum) and 3.1.1.2 (block header: last flag, type 0 = raw, size).
func appendRawZstd(dst, b []byte) []byte {
	const maxBlock = 128 << 10
	dst = binary.LittleEndian.AppendUint32(dst, 0xfd2fb528)
	dst = append(dst, 2<<6|1<<5) // content size in 4 bytes, single segment
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(b)))
	for {
		n := min(len(b), maxBlock)
		hdr := uint32(n) << 3 // type raw
		if n == len(b) {
			hdr |= 1 // last block
		}
		dst = append(dst, byte(hdr), byte(hdr>>8), byte(hdr>>16))
		dst = append(dst, b[:n]...)
		b = b[n:]
		if len(b) == 0 {
			return dst
		}
	}
}

// magic opens and closes a Parquet file.
const magic = "PAR1"

// fileWriter writes a Parquet file's pages, row groups and footer: the
// column chunks of this package's fixed schema, encoded from typed column
// slices (see doc.go for why not through a generic row writer).
type fileWriter struct {
	w    io.Writer
	off  int64
	err  error
	zstd *zstd.Encoder

	// Scratch buffers, reused from chunk to chunk.
	body, enc, comp, levels []byte
	idx                     []int32
	i32                     []int32
	idict                   intDict
	sdict                   strDict
	proto                   thrift.CompactProtocol

	// compress says whether the chunk being written is zstd-compressed.
	compress bool

	schema    []format.SchemaElement
	leaves    int
	rowGroups []format.RowGroup
	rows      int64
}

func newFileWriter(w io.Writer, specs []*colSpec) *fileWriter {
	// Fastest level, one goroutine: the compressor's share of the
	// writer's time is then a tenth (docs/benchmarks.md).
	z, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true), zstd.WithEncoderCRC(false))
	if err != nil {
		panic(err) // only for invalid options
	}
	f := &fileWriter{w: w, zstd: z, leaves: len(specs)}
	f.schema = schemaOf(specs)
	return f
}

func (f *fileWriter) write(b []byte) {
	if f.err != nil {
		return
	}
	n, err := f.w.Write(b)
	f.off += int64(n)
	if err != nil {
		f.err = fmt.Errorf("write at offset %d: %w", f.off, err)
	}
}

// pageSizes accumulates a column chunk's sizes.
type pageSizes struct{ comp, uncomp int64 }

// page writes header h and body, zstd-compressed if f.compress.
func (f *fileWriter) page(h *format.PageHeader, body []byte, sz *pageSizes) {
	if f.compress {
		f.comp = f.zstd.EncodeAll(body, f.comp[:0])
	} else {
		f.comp = appendRawZstd(f.comp[:0], body)
	}
	h.UncompressedPageSize = int32(len(body))
	h.CompressedPageSize = int32(len(f.comp))
	hb, err := thrift.Marshal(&f.proto, h)
	if err != nil {
		if f.err == nil {
			f.err = fmt.Errorf("encode page header: %w", err)
		}
		return
	}
	f.write(hb)
	f.write(f.comp)
	sz.comp += int64(len(hb) + len(f.comp))
	sz.uncomp += int64(len(hb) + len(body))
}

// dictPage writes a dictionary page of n values, PLAIN-encoded in body.
func (f *fileWriter) dictPage(n int, body []byte, sz *pageSizes) {
	f.page(&format.PageHeader{Type: format.DictionaryPage,
		DictionaryPageHeader: thrift.New(format.DictionaryPageHeader{NumValues: int32(n), Encoding: format.Plain})}, body, sz)
}

// dataPage writes a version 1 data page of rows values (nulls included).
func (f *fileWriter) dataPage(rows int, enc format.Encoding, body []byte, sz *pageSizes) {
	f.page(&format.PageHeader{Type: format.DataPage,
		DataPageHeader: thrift.New(format.DataPageHeader{NumValues: int32(rows), Encoding: enc,
			DefinitionLevelEncoding: format.RLE, RepetitionLevelEncoding: format.RLE})}, body, sz)
}

// appendLevels appends the definition levels of an optional column as a
// version 1 data page holds them: a 4-byte length, then the RLE/bit-packed
// hybrid of bit width 1.
func (f *fileWriter) appendLevels(dst []byte, def []uint8) []byte {
	return f.appendLevelsWidth(dst, def, 1)
}

// appendLevelsWidth is appendLevels for levels of bit width bw.
func (f *fileWriter) appendLevelsWidth(dst []byte, def []uint8, bw int) []byte {
	var err error
	f.levels, err = (&rle.Encoding{BitWidth: bw}).EncodeLevels(f.levels, def)
	if err != nil { // only for a level above 1
		panic(err)
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(f.levels)))
	return append(dst, f.levels...)
}

// appendIndexes appends dictionary indexes as an RLE_DICTIONARY page
// holds them: the bit width, then the hybrid encoding.
func (f *fileWriter) appendIndexes(dst []byte, idx []int32, dictLen int) []byte {
	bw := max(bits.Len(uint(dictLen-1)), 1)
	var err error
	f.enc, err = (&rle.Encoding{BitWidth: bw}).EncodeInt32(f.enc, idx)
	if err != nil {
		panic(err)
	}
	dst = append(dst, byte(bw))
	return append(dst, f.enc...)
}

// appendPlainInts appends vals PLAIN-encoded as the column's physical type.
func appendPlainInts(dst []byte, vals []int64, phys format.Type) []byte {
	if phys == format.Int32 {
		for _, v := range vals {
			dst = binary.LittleEndian.AppendUint32(dst, uint32(v))
		}
		return dst
	}
	for _, v := range vals {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(v))
	}
	return dst
}

// meta returns the chunk's metadata, its pages written from start on.
func (f *fileWriter) meta(s *colSpec, rows int, start, dictOff, dataOff int64, sz pageSizes, st format.Statistics, encs ...format.Encoding) format.ColumnChunk {
	m := format.ColumnMetaData{
		Type:                  s.physical(),
		Encoding:              encs,
		PathInSchema:          s.path(),
		Codec:                 format.Zstd,
		NumValues:             int64(rows),
		TotalUncompressedSize: sz.uncomp,
		TotalCompressedSize:   sz.comp,
		DataPageOffset:        dataOff,
		DictionaryPageOffset:  dictOff,
		Statistics:            st,
	}
	return format.ColumnChunk{FileOffset: start, MetaData: m}
}

func (c *intColumn) chunk(f *fileWriter, rows int) format.ColumnChunk {
	start := f.off
	var sz pageSizes
	var dictOff int64
	body := f.body[:0]
	if c.optional {
		body = f.appendLevels(body, c.def)
	}
	phys := c.physical()
	enc := format.Plain
	switch c.enc {
	case encDict:
		ok := false
		if c.plainChunks > 0 {
			c.plainChunks--
		} else if len(c.vals) > 0 {
			f.idx, ok = f.idict.build(c.vals, f.idx, len(c.vals)/2+16)
			if !ok {
				// Values that hardly repeat now will not next
				// time either: do not build the dictionary for the
				// next chunks (most of the build is wasted).
				c.plainChunks = retryChunks
			}
		}
		if ok {
			dictOff = f.off
			f.enc = appendPlainInts(f.enc[:0], f.idict.vals, phys)
			f.dictPage(len(f.idict.vals), f.enc, &sz)
			body = f.appendIndexes(body, f.idx, len(f.idict.vals))
			enc = format.RLEDictionary
		} else {
			body = appendPlainInts(body, c.vals, phys)
		}
	case encDelta:
		if phys == format.Int32 {
			f.i32 = f.i32[:0]
			for _, v := range c.vals {
				f.i32 = append(f.i32, int32(v))
			}
			f.enc, _ = (&delta.BinaryPackedEncoding{}).EncodeInt32(f.enc, f.i32)
		} else {
			f.enc, _ = (&delta.BinaryPackedEncoding{}).EncodeInt64(f.enc, c.vals)
		}
		body = append(body, f.enc...)
		enc = format.DeltaBinaryPacked
	default:
		body = appendPlainInts(body, c.vals, phys)
	}
	f.body = body
	dataOff := f.off
	f.dataPage(rows, enc, body, &sz)
	st := format.Statistics{NullCount: int64(rows - len(c.vals))}
	if c.bounds && len(c.vals) > 0 {
		lo, hi := intBounds(c.vals, c.typ == typeUint64)
		st.MinValue = appendPlainInts(nil, []int64{lo}, phys)
		st.MaxValue = appendPlainInts(nil, []int64{hi}, phys)
	}
	return f.meta(&c.colSpec, rows, start, dictOff, dataOff, sz, st, encodings(enc)...)
}

// encodings lists the encodings of a chunk whose data page is encoded
// with enc: the levels' RLE, and PLAIN for a dictionary page.
func encodings(enc format.Encoding) []format.Encoding {
	if enc == format.RLEDictionary {
		return []format.Encoding{enc, format.RLE, format.Plain}
	}
	return []format.Encoding{enc, format.RLE}
}

// intBounds returns the least and greatest of vals, compared as unsigned
// when unsigned is set.
func intBounds(vals []int64, unsigned bool) (lo, hi int64) {
	lo, hi = vals[0], vals[0]
	if unsigned {
		for _, v := range vals[1:] {
			if uint64(v) < uint64(lo) {
				lo = v
			}
			if uint64(v) > uint64(hi) {
				hi = v
			}
		}
		return lo, hi
	}
	for _, v := range vals[1:] {
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

func (c *boolColumn) chunk(f *fileWriter, rows int) format.ColumnChunk {
	start := f.off
	var sz pageSizes
	body := f.body[:0]
	var cur byte
	anyTrue, anyFalse := false, false
	for i, v := range c.vals {
		if v {
			cur |= 1 << (i & 7)
			anyTrue = true
		} else {
			anyFalse = true
		}
		if i&7 == 7 {
			body = append(body, cur)
			cur = 0
		}
	}
	if len(c.vals)&7 != 0 {
		body = append(body, cur)
	}
	f.body = body
	dataOff := f.off
	f.dataPage(rows, format.Plain, body, &sz)
	st := format.Statistics{}
	if c.bounds && len(c.vals) > 0 {
		b := func(v bool) []byte {
			if v {
				return []byte{1}
			}
			return []byte{0}
		}
		st.MinValue, st.MaxValue = b(!anyFalse), b(anyTrue)
	}
	return f.meta(&c.colSpec, rows, start, 0, dataOff, sz, st, format.Plain)
}

// appendPlainStrings appends vals PLAIN-encoded: each a 4-byte length and
// its bytes.
func appendPlainStrings(dst []byte, vals []string) []byte {
	for _, s := range vals {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(s)))
		dst = append(dst, s...)
	}
	return dst
}

func (c *strColumn) chunk(f *fileWriter, rows int) format.ColumnChunk {
	start := f.off
	var sz pageSizes
	var dictOff int64
	body := f.body[:0]
	if c.optional {
		body = f.appendLevels(body, c.def)
	}
	enc := format.Plain
	distinct := c.vals
	if c.enc == encDict && len(c.vals) > 0 {
		f.idx = f.sdict.build(c.vals, f.idx)
		distinct = f.sdict.vals
		dictOff = f.off
		f.enc = appendPlainStrings(f.enc[:0], distinct)
		f.dictPage(len(distinct), f.enc, &sz)
		body = f.appendIndexes(body, f.idx, len(distinct))
		enc = format.RLEDictionary
	} else {
		body = appendPlainStrings(body, c.vals)
	}
	f.body = body
	dataOff := f.off
	f.dataPage(rows, enc, body, &sz)
	st := format.Statistics{NullCount: int64(rows - len(c.vals))}
	if c.bounds && len(distinct) > 0 {
		lo, hi := distinct[0], distinct[0]
		for _, s := range distinct[1:] {
			lo, hi = min(lo, s), max(hi, s)
		}
		st.MinValue, st.MaxValue = []byte(lo), []byte(hi)
	}
	return f.meta(&c.colSpec, rows, start, dictOff, dataOff, sz, st, encodings(enc)...)
}

// chunk writes the lists' elements, dictionary-encoded, with their
// repetition and definition levels.
func (c *listColumn) chunk(f *fileWriter, rows int) format.ColumnChunk {
	start := f.off
	var sz pageSizes
	var dictOff int64
	body := f.appendLevelsWidth(f.body[:0], c.rep, 1)
	body = f.appendLevelsWidth(body, c.def, 2)
	enc := format.Plain
	if len(c.vals) > 0 {
		f.idx = f.sdict.build(c.vals, f.idx)
		dictOff = f.off
		f.enc = appendPlainStrings(f.enc[:0], f.sdict.vals)
		f.dictPage(len(f.sdict.vals), f.enc, &sz)
		body = f.appendIndexes(body, f.idx, len(f.sdict.vals))
		enc = format.RLEDictionary
	}
	f.body = body
	dataOff := f.off
	levels := len(c.def)
	f.dataPage(levels, enc, body, &sz)
	st := format.Statistics{NullCount: int64(levels - len(c.vals))}
	return f.meta(&c.colSpec, levels, start, dictOff, dataOff, sz, st, encodings(enc)...)
}

// chunk writes a dictionary of the one value and a single RLE run of
// index 0.
func (c *constColumn) chunk(f *fileWriter, rows int) format.ColumnChunk {
	start := f.off
	var sz pageSizes
	var v []byte
	switch c.typ {
	case typeString:
		v = appendPlainStrings(nil, []string{c.s})
	case typeBool:
		panic("parquetfile: constant boolean column")
	default:
		v = appendPlainInts(nil, []int64{c.i}, c.physical())
	}
	f.dictPage(1, v, &sz)
	body := append(f.body[:0], 1) // bit width 1
	body = binary.AppendUvarint(body, uint64(rows)<<1)
	body = append(body, 0)
	f.body = body
	dataOff := f.off
	f.dataPage(rows, format.RLEDictionary, body, &sz)
	st := format.Statistics{}
	if c.bounds {
		b := v
		if c.typ == typeString {
			b = []byte(c.s)
		}
		st.MinValue, st.MaxValue = b, bytes.Clone(b)
	}
	return f.meta(&c.colSpec, rows, start, start, dataOff, sz, st, format.RLEDictionary, format.RLE, format.Plain)
}

// schemaOf returns the file's schema: a root and one leaf per column.
func schemaOf(specs []*colSpec) []format.SchemaElement {
	out := []format.SchemaElement{{Name: "iotrace_event", NumChildren: thrift.New(int32(len(specs)))}}
	for _, s := range specs {
		if s.list {
			out = append(out,
				format.SchemaElement{Name: s.name, RepetitionType: thrift.New(format.Optional), NumChildren: thrift.New(int32(1)),
					LogicalType: format.LogicalType{Value: &format.ListType{}}, ConvertedType: thrift.New(deprecated.List)},
				format.SchemaElement{Name: "list", RepetitionType: thrift.New(format.Repeated), NumChildren: thrift.New(int32(1))},
				format.SchemaElement{Name: "element", Type: thrift.New(format.ByteArray), RepetitionType: thrift.New(format.Required),
					LogicalType: format.LogicalType{Value: &format.StringType{}}, ConvertedType: thrift.New(deprecated.UTF8)})
			continue
		}
		e := format.SchemaElement{Name: s.name, Type: thrift.New(s.physical()), RepetitionType: thrift.New(format.Required)}
		if s.optional {
			e.RepetitionType = thrift.New(format.Optional)
		}
		switch s.typ {
		case typeInt64:
			e.LogicalType.Value = &format.IntType{BitWidth: 64, IsSigned: true}
			e.ConvertedType = thrift.New(deprecated.Int64)
		case typeUint64:
			e.LogicalType.Value = &format.IntType{BitWidth: 64, IsSigned: false}
			e.ConvertedType = thrift.New(deprecated.Uint64)
		case typeInt32:
			e.LogicalType.Value = &format.IntType{BitWidth: 32, IsSigned: true}
			e.ConvertedType = thrift.New(deprecated.Int32)
		case typeTimestamp:
			e.LogicalType.Value = &format.TimestampType{IsAdjustedToUTC: true, Unit: format.TimeUnit{Value: &format.MicroSeconds{}}}
			e.ConvertedType = thrift.New(deprecated.TimestampMicros)
		case typeString:
			e.LogicalType.Value = &format.StringType{}
			e.ConvertedType = thrift.New(deprecated.UTF8)
		}
		out = append(out, e)
	}
	return out
}

// rowGroup writes the columns' rows as a row group.
func (f *fileWriter) rowGroup(cols []column, rows int) {
	if rows == 0 {
		return
	}
	if f.off == 0 {
		f.write([]byte(magic))
	}
	start := f.off
	rg := format.RowGroup{NumRows: int64(rows), FileOffset: start, Ordinal: int16(len(f.rowGroups))}
	for _, c := range cols {
		s := c.spec()
		f.compress = s.rawChunks == 0
		cc := c.chunk(f, rows)
		switch {
		case !f.compress:
			s.rawChunks--
		case 10*cc.MetaData.TotalCompressedSize > 9*cc.MetaData.TotalUncompressedSize:
			// Incompressible (bit-packed indexes, delta-packed
			// times): skip zstd for the next chunks, then try again.
			s.rawChunks = retryChunks
		}
		rg.Columns = append(rg.Columns, cc)
		rg.TotalByteSize += cc.MetaData.TotalUncompressedSize
		rg.TotalCompressedSize += cc.MetaData.TotalCompressedSize
	}
	f.rowGroups = append(f.rowGroups, rg)
	f.rows += int64(rows)
}

// footer writes the file metadata with kv and the closing magic.
func (f *fileWriter) footer(kv []format.KeyValue) {
	if f.off == 0 {
		f.write([]byte(magic))
	}
	orders := make([]format.ColumnOrder, f.leaves)
	for i := range orders {
		orders[i].Value = &format.TypeDefinedOrder{}
	}
	md := format.FileMetaData{
		Version:          1,
		Schema:           f.schema,
		NumRows:          f.rows,
		RowGroups:        f.rowGroups,
		KeyValueMetadata: kv,
		CreatedBy:        "iotrace",
		ColumnOrders:     orders,
	}
	b, err := thrift.Marshal(&f.proto, &md)
	if err != nil {
		if f.err == nil {
			f.err = fmt.Errorf("encode footer: %w", err)
		}
		return
	}
	f.write(b)
	f.write(binary.LittleEndian.AppendUint32(nil, uint32(len(b))))
	f.write([]byte(magic))
}

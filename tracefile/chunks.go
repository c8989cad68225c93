package tracefile

import (
	"errors"
	"fmt"

	"github.com/iotrace/iotrace/event"
)

// ChunkEncoder encodes events and facts into records chunks held in
// memory, each a whole chunk of the file (header, CRC, payload in the
// current format version): a Writer writes one as it is (WriteChunk) and
// a ChunkDecoder reads it back. A flight recorder keeps its window so, in
// the bytes the file will hold.
type ChunkEncoder struct {
	enc    *chunkEnc
	out    []byte
	events int
	facts  int
}

// NewChunkEncoder returns an empty encoder.
func NewChunkEncoder() *ChunkEncoder { return &ChunkEncoder{enc: newChunkEnc()} }

// Event adds e to the chunk being built.
func (c *ChunkEncoder) Event(e *event.Event) {
	c.enc.encodeEvent(e)
	c.events++
}

// Fact adds f to the chunk being built.
func (c *ChunkEncoder) Fact(f *event.Fact) {
	c.enc.encodeFact(f)
	c.facts++
}

// Size is the encoded size of the chunk being built, without its header.
func (c *ChunkEncoder) Size() int { return c.enc.size() }

// Len returns the events and facts of the chunk being built.
func (c *ChunkEncoder) Len() (events, facts int) { return c.events, c.facts }

// Seal returns the chunk built so far, whole, with its events and facts,
// and starts the next one. The bytes are valid until the next Seal.
func (c *ChunkEncoder) Seal() (chunk []byte, events, facts int) {
	c.out = appendChunk(c.out[:0], chunkRecords, c.enc.appendRecords)
	events, facts = c.events, c.facts
	c.enc.reset()
	c.events, c.facts = 0, 0
	return c.out, events, facts
}

// WriteChunk writes a records chunk made by a ChunkEncoder (Seal) after
// the records written so far; events and facts are its counts (Seal's),
// which the trailer adds up.
func (w *Writer) WriteChunk(chunk []byte, events, facts int) error {
	if err := w.check("WriteChunk"); err != nil {
		return err
	}
	if w.old {
		return fmt.Errorf("tracefile.Writer: chunks of format version %d cannot go into a file of version %d", Version, w.opts.Version)
	}
	if len(chunk) < chunkHeaderSize || chunk[4] != chunkRecords {
		return errors.New("tracefile.Writer: WriteChunk of something else than a records chunk")
	}
	if err := w.flush(); err != nil {
		return err
	}
	w.events += uint64(events)
	w.facts += uint64(facts)
	return w.writeChunks(chunk, events)
}

// ChunkDecoder decodes records chunks made by a ChunkEncoder. Its string
// table is kept from chunk to chunk, as a Reader's is.
type ChunkDecoder struct {
	r Reader
}

// Decode delivers the records of the chunk raw to sink in their order, or only
// its facts when factsOnly. Damage (a chunk that is not one Seal made)
// is an error.
func (d *ChunkDecoder) Decode(raw []byte, sink event.Sink, factsOnly bool) error {
	if len(raw) < chunkHeaderSize || string(raw[:4]) != chunkSync || raw[4] != chunkRecords {
		return errors.New("tracefile: not a records chunk")
	}
	d.r.version = Version
	d.r.damage = d.r.damage[:0]
	c := chunk{typ: chunkRecords, payload: raw[chunkHeaderSize:]}
	if err := d.r.decodeRecords(&c, sink, factsOnly, nil); err != nil {
		return err
	}
	if len(d.r.damage) > 0 {
		return fmt.Errorf("tracefile: damaged records chunk: %s", d.r.damage[0].Reason)
	}
	return nil
}

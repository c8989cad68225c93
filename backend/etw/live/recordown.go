package live

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/iotrace/iotrace/backend/etw/kernel"
	"github.com/iotrace/iotrace/backend/etw/ownprovider"
	"github.com/iotrace/iotrace/backend/etw/record"
)

// What `record -o t.etl` writes besides the kernel's events.
//
// A raw kernel .etl has no volume map (its paths read back as
// \Device\HarddiskVolumeN\...) and no PDB identity for its images (a
// stack cannot be named from the right PDB on another machine). The
// recording session therefore also receives events of iotrace's own
// provider (package ownprovider), written as ownwriter.go says (TraceEvent,
// or the provider when the session refuses it):
//
//   - right after the session starts, one OpcodeVolume event per volume
//     with a drive letter (QueryDosDevice);
//   - with --stacks, one OpcodeImage event per image: those loaded when
//     the recording starts and those loaded during it. A file-mode
//     session cannot be read while it records, so a companion real-time
//     kernel session "iotrace-<pid>-images" with only the image-load
//     flag runs alongside (its start-up rundown, one DCStart per module
//     of every process, lists the images already loaded, then it
//     reports each load); each image's identity is read from its file
//     off the ETW thread (images.go) and written into the recording
//     session, naming the image by process, base and path. The
//     companion needs a second kernel session (at most 8, 2 reserved).
//     Its start-up rundown comes before anything drains it, so it gets
//     the main session's buffers (buffers.go), and what it lost is
//     reported. Identities are written a little after their image's
//     load, not at its timestamp; a reader matches them by process and
//     base.

// writeVolumes writes the volume map through w, one event per volume,
// in NT path order.
func writeVolumes(w *ownWriter, vols map[string]string) (int, error) {
	nts := make([]string, 0, len(vols))
	for nt := range vols {
		nts = append(nts, nt)
	}
	sort.Strings(nts)
	for i, nt := range nts {
		v := ownprovider.Volume{NtPath: nt, DosPath: vols[nt]}
		if err := w.write(ownprovider.OpcodeVolume, v.Encode()); err != nil {
			return i, fmt.Errorf("write the volume map (%s → %s): %w", nt, vols[nt], err)
		}
	}
	return len(nts), nil
}

// imageRecorder writes the identities of the images its companion
// real-time session reports into the recording session.
type imageRecorder struct {
	w       *ownWriter // into the recording session
	ir      *imageResolver
	s       *consumed
	wdone   chan struct{}
	stop    sync.Once
	timeout time.Duration
	// the writer's counts
	mu              sync.Mutex
	written, failed int
	lastErr         error
}

// Event implements Consumer, on the companion's ETW thread: image loads
// are handed to the resolver's workers, or written at once when their
// version was read already.
func (c *imageRecorder) Event(er *EventRecord) {
	h := &er.EventHeader
	if h.ProviderID != GUID(kernel.GUIDImage) {
		return
	}
	if op := h.EventDescriptor.Opcode; op != kernel.OpcodeImageLoad && op != kernel.OpcodeImageDCStart {
		return
	}
	var rec record.Record
	var buf []byte
	var ext []record.ExtItem
	Convert(er, &rec, &buf, &ext)
	if now, _ := c.ir.submit(&rec, 0); now != nil {
		c.write(now)
	}
}

// write writes one identity into the recording session.
func (c *imageRecorder) write(it *item) {
	err := c.w.write(ownprovider.OpcodeImage, it.data)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.failed++
		c.lastErr = err
	} else {
		c.written++
	}
}

// startImageRecorder starts the companion session of the recording
// session (written to through w) of process pid, its buffers as cfg
// plans them.
func startImageRecorder(api API, w *ownWriter, pid uint32, cfg *Config, vols map[string]string, warn func(string)) (*imageRecorder, error) {
	c := &imageRecorder{w: w, ir: newImageResolver(api, vols), wdone: make(chan struct{}), timeout: cfg.StopTimeout}
	c.ir.start()
	go func() {
		defer close(c.wdone)
		for a := range c.ir.out {
			if a.it != nil { // nil: no identity to give (counted)
				c.write(a.it)
			}
		}
	}()
	scfg := &SessionConfig{Name: ImagesName(pid), EnableFlags: FlagImageLoad, BufferSizeKB: cfg.BufferSizeKB,
		MinBuffers: cfg.MinBuffers, MaxBuffers: cfg.MaxBuffers, FlushTimer: 1, ClockType: cfg.ClockType}
	s, err := startConsumed(api, scfg, kindImages, c, consumeOptions{}, warn)
	if err != nil {
		c.ir.closeJobs()
		<-c.wdone
		return nil, err
	}
	c.s = s
	if ok, err := s.waitConnected(cfg.ConnectTimeout); err != nil {
		warn(fmt.Sprintf("image-load session: %v: identities of images loaded before the recording may be missing", err))
	} else if !ok {
		warn(fmt.Sprintf("the image-load session delivered nothing within %v: identities of images loaded before the recording may be missing", cfg.ConnectTimeout))
	}
	return c, nil
}

// finish stops the companion session, waits (bounded) for the last
// identities to be written, and returns a summary for the user.
func (c *imageRecorder) finish() string {
	var summary string
	c.stop.Do(func() {
		c.s.finish(c.timeout)
		lost := uint64(c.s.status.EventsLost) + uint64(c.s.status.RealTimeBuffersLost)
		c.ir.closeJobs()
		select {
		case <-c.wdone:
		case <-time.After(c.timeout):
			c.ir.giveUp()
		}
		ir := c.ir
		ir.mu.Lock()
		defer ir.mu.Unlock()
		c.mu.Lock()
		defer c.mu.Unlock()
		parts := []string{fmt.Sprintf("%d image identities written", c.written)}
		for _, p := range []struct {
			n    uint64
			what string
		}{
			{ir.noPDB, "images without a PDB record"},
			{ir.unreadable, "images whose file could not be read"},
			{ir.mismatch, "images replaced on disk since loaded"},
			{ir.dropped, "lookups dropped (too many pending)"},
			{ir.unfinished, "lookups unfinished at the stop"},
			{uint64(c.failed), "identities the session refused"},
			{lost, "image events (or buffers) the image-load session lost: their identities are missing"},
		} {
			if p.n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
			}
		}
		summary = strings.Join(parts, ", ") + " (" + c.w.path() + ")"
		if c.lastErr != nil {
			summary += fmt.Sprintf(" (last refusal: %v)", c.lastErr)
		}
	})
	return summary
}

package input

import (
	"context"
	"os"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
)

// progressSink checks, at every event, that Progress only rises and stays
// within the total.
type progressSink struct {
	t          *testing.T
	r          Reader
	last       int64
	total      int64
	moved      bool
	begun, end bool
}

func (p *progressSink) check() {
	done, total, ok := Progress(p.r)
	if !ok || done < p.last || done > total || total != p.total {
		p.t.Fatalf("Progress = %d, %d, %v after %d of %d", done, total, ok, p.last, p.total)
	}
	p.moved = p.moved || done > p.last
	p.last = done
}

func (p *progressSink) Begin(*event.Header) error { p.check(); return nil }
func (p *progressSink) Event(*event.Event) error  { p.check(); return nil }
func (p *progressSink) Fact(*event.Fact) error    { return nil }
func (p *progressSink) End(*event.Trailer) error  { p.check(); return nil }

// TestProgress: the bytes read of a .iot and a jsonl file (opened, and
// spooled from standard input) rise through Run to the total, both passes
// (the facts', the events') counted: twice the file's size.
func TestProgress(t *testing.T) {
	tr := synth.Trace(synth.Options{Events: 20_000})
	for name, path := range map[string]string{"iot": writeIOT(t, tr), "jsonl": writeJSONL(t, tr)} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, via := range []string{"file", "stdin"} {
			var r Reader
			if via == "file" {
				r, err = Open(path)
			} else {
				f, ferr := os.Open(path)
				if ferr != nil {
					t.Fatal(ferr)
				}
				defer f.Close()
				r, err = OpenFrom("-", f)
			}
			if err != nil {
				t.Fatal(err)
			}
			if done, total, ok := Progress(r); !ok || done != 0 || total != 2*st.Size() {
				t.Errorf("%s via %s: before Run: Progress = %d, %d, %v; want 0, %d, true", name, via, done, total, ok, 2*st.Size())
			}
			p := &progressSink{t: t, r: r, total: 2 * st.Size()}
			if err := r.Run(context.Background(), p); err != nil {
				t.Fatal(err)
			}
			if done, _, _ := Progress(r); done != p.total || !p.moved {
				t.Errorf("%s via %s: after Run: %d of %d read (moved during Run: %v)", name, via, done, p.total, p.moved)
			}
			r.Close()
		}
	}
	var other Reader = &jsonlReader{}
	if _, _, ok := Progress(struct{ Reader }{other}); ok {
		t.Errorf("Progress of a reader it does not know says ok")
	}
}

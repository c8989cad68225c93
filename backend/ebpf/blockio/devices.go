package blockio

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/iotrace/iotrace/event"
)

// Devices names block devices from sysfs (/sys/dev/block/MAJ:MIN): the
// kernel name ("vda1") and, for a partition, the disk it belongs to
// ("vda"). It remembers every device it was asked about, including the
// ones it could not name, so each is looked up once. Not safe for
// concurrent use.
type Devices struct {
	sysfs string
	known map[event.Device]bool
	facts []event.Fact
}

// NewDevices returns a device table reading sysfs mounted at root
// ("/sys" on a live system).
func NewDevices(root string) *Devices {
	return &Devices{sysfs: root, known: make(map[event.Device]bool)}
}

// Scan adds every block device sysfs lists, as rundown facts at time t.
// It returns the number of devices found.
func (d *Devices) Scan(t int64) (int, error) {
	ents, err := os.ReadDir(filepath.Join(d.sysfs, "dev", "block"))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		maj, min, ok := parseMajMin(e.Name())
		if !ok {
			continue
		}
		if _, added := d.Add(event.Device{Major: maj, Minor: min}, t, true); added {
			n++
		}
	}
	return n, nil
}

// Add looks dev up unless it is known already. It returns the new fact and
// true when dev was new and sysfs named it.
func (d *Devices) Add(dev event.Device, t int64, rundown bool) (event.Fact, bool) {
	if d.known[dev] {
		return event.Fact{}, false
	}
	d.known[dev] = true
	name, disk, ok := d.lookup(dev)
	if !ok {
		return event.Fact{}, false
	}
	f := event.Fact{Kind: event.FactDevice, Time: t, Rundown: rundown, Dev: dev, Name: name, Detail: disk}
	d.facts = append(d.facts, f)
	return f, true
}

// Known reports whether dev was looked up already.
func (d *Devices) Known(dev event.Device) bool { return d.known[dev] }

// Facts returns a copy of the facts of every device named so far.
func (d *Devices) Facts() []event.Fact { return append([]event.Fact(nil), d.facts...) }

// lookup resolves /sys/dev/block/MAJ:MIN, a symlink to
// .../block/DISK[/PART].
func (d *Devices) lookup(dev event.Device) (name, disk string, ok bool) {
	link := filepath.Join(d.sysfs, "dev", "block", dev.String())
	target, err := os.Readlink(link)
	if err != nil {
		return "", "", false
	}
	name = filepath.Base(target)
	disk = name
	if _, err := os.Stat(filepath.Join(link, "partition")); err == nil {
		disk = filepath.Base(filepath.Dir(target))
	}
	return name, disk, name != "" && name != "." && name != "/"
}

func parseMajMin(s string) (maj, min uint32, ok bool) {
	a, b, found := strings.Cut(s, ":")
	if !found {
		return 0, 0, false
	}
	x, err1 := strconv.ParseUint(a, 10, 32)
	y, err2 := strconv.ParseUint(b, 10, 32)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return uint32(x), uint32(y), true
}

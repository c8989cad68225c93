package filter

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/iotrace/iotrace/event"
)

// AddFlags binds --pid, --follow-children, --comm, --path, --op, --layer,
// --min-latency and --failed to o. List flags take comma-separated values
// and may repeat.
func AddFlags(fs *pflag.FlagSet, o *Options) {
	fs.Var((*pidList)(&o.Pids), "pid", "only processes with these pids (comma-separated, repeatable)")
	fs.BoolVar(&o.FollowChildren, "follow-children", false, "with --pid, also the processes they start")
	fs.StringSliceVar(&o.Comms, "comm", nil, "only processes with these names (globs: 'cc*')")
	fs.StringArrayVar(&o.PathGlobs, "path", nil, "only files matching this glob ('**' spans directories; no '/' matches the file name); repeatable")
	fs.Var((*opList)(&o.Ops), "op", "only these ops (comma-separated; --op help lists them)")
	fs.Var((*layerList)(&o.Layers), "layer", "only these layers: file, block, marker")
	fs.DurationVar(&o.MinLatency, "min-latency", 0, "only operations that took at least this long (250us, 1ms)")
	fs.BoolVar(&o.Failed, "failed", false, "only operations that failed")
}

// pidList is a pflag.Value for []uint32.
type pidList []uint32

func (l *pidList) String() string {
	s := make([]string, len(*l))
	for i, p := range *l {
		s[i] = strconv.FormatUint(uint64(p), 10)
	}
	return "[" + strings.Join(s, ",") + "]"
}

func (l *pidList) Set(v string) error {
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, err := strconv.ParseUint(f, 10, 32)
		if err != nil {
			return fmt.Errorf("pid %q is not a number", f)
		}
		*l = append(*l, uint32(p))
	}
	return nil
}

func (l *pidList) Type() string { return "pids" }

// opList is a pflag.Value for []event.Op.
type opList []event.Op

func (l *opList) String() string {
	s := make([]string, len(*l))
	for i, o := range *l {
		s[i] = o.String()
	}
	return "[" + strings.Join(s, ",") + "]"
}

func (l *opList) Set(v string) error {
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		op, err := event.ParseOp(f)
		if err == nil && op == event.OpUnknown {
			err = fmt.Errorf("unknown op %q", f)
		}
		if err != nil {
			return fmt.Errorf("%w (valid: %s)", err, ValidOps())
		}
		*l = append(*l, op)
	}
	return nil
}

func (l *opList) Type() string { return "ops" }

// layerList is a pflag.Value for []event.Layer.
type layerList []event.Layer

func (l *layerList) String() string {
	s := make([]string, len(*l))
	for i, x := range *l {
		s[i] = x.String()
	}
	return "[" + strings.Join(s, ",") + "]"
}

func (l *layerList) Set(v string) error {
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		x, err := event.ParseLayer(f)
		if err != nil {
			return err
		}
		*l = append(*l, x)
	}
	return nil
}

func (l *layerList) Type() string { return "layers" }

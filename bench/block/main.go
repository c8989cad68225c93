//go:build linux

// Command block is the block I/O tracer on its own, for the benchmark in
// run.sh: it traces every bio with package backend/ebpf/blockio until
// SIGINT or SIGTERM, discards the events (decoded, as iotrace would) and
// prints their count and every problem counter.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/iotrace/iotrace/backend/ebpf/blockio"
	"github.com/iotrace/iotrace/event"
)

func main() {
	ready := flag.String("ready", "", "file to create once the probes are attached")
	noWitness := flag.Bool("no-witness", false, "without the block completion witness (tracefs instance)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *ready, *noWitness); err != nil {
		fmt.Fprintln(os.Stderr, "block:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, ready string, noWitness bool) error {
	t, err := blockio.Open(blockio.Options{
		ExcludePid: uint32(os.Getpid()),
		NoWitness:  noWitness,
		Warn:       func(msg string) { fmt.Fprintln(os.Stderr, "block: warning:", msg) },
	})
	if err != nil {
		return err
	}
	defer t.Close()
	start := cpuTime() // the reader's cost, without loading the programs
	if ready != "" {
		if err := os.WriteFile(ready, nil, 0o644); err != nil {
			return err
		}
	}
	var n, bytes uint64
	err = t.Run(ctx, func(e *event.Event) {
		n++
		bytes += e.Size
	})
	if err != nil {
		return err
	}
	s := t.Stats()
	cpu := cpuTime() - start
	perEvent := 0.0
	if n > 0 {
		perEvent = float64(cpu.Nanoseconds()) / float64(n)
	}
	fmt.Fprintf(os.Stderr, "block: %d events, %d bytes, user-space CPU %v (%.0f ns/event)\n", n, bytes, cpu, perEvent)
	for _, c := range s.Problems() {
		fmt.Fprintf(os.Stderr, "block: %s: %s = %d\n", c.Kind, c.Name, c.Value)
	}
	if n := s.Get(event.CountInfo, blockio.StatWitnessed); n != 0 {
		fmt.Fprintf(os.Stderr, "block: %s = %d\n", blockio.StatWitnessed, n)
	}
	return nil
}

// cpuTime returns the user and system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

#!/bin/bash
# Run as root from anywhere after building the two binaries:
#   (old tree) go build -o /tmp/iot.old ./cmd/iotrace; go build -o /tmp/iot.new ./cmd/iotrace; go build -o /tmp/sbench ./bench/syscall
# side by side: iotrace before the stacks work (old) and with it, --stacks off (new)
f=/tmp/offbench.dat; head -c 4096 /dev/urandom > $f
for i in 1 2 3 4 5 6 7; do
  for b in old new; do
    /tmp/iot.$b record -o /tmp/off_$b.iot -- /tmp/sbench workload pread 1000000 $f 2>/dev/null | tail -1 | sed "s/^/$b /"
  done
  /tmp/sbench workload pread 1000000 $f | sed "s/^/bare /"
done

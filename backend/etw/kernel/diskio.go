package kernel

import "github.com/iotrace/iotrace/event"

// DiskIo opcodes (kernel group 1). Completions (Read, Write,
// FlushBuffers) pair with their Init by IRP. Note 14 is the flush
// completion and 15 its Init.
const (
	OpcodeDiskRead         = 10
	OpcodeDiskWrite        = 11
	OpcodeDiskReadInit     = 12
	OpcodeDiskWriteInit    = 13
	OpcodeDiskFlushBuffers = 14
	OpcodeDiskFlushInit    = 15
)

// DiskIo layouts: v2 (Vista, 7) and v3 (8 and later, which appends
// IssuingThreadId). The completion's "FileObject" is the FileKey.
var (
	diskRWV2 = []field{u32("DiskNumber", dDisk), u32("IrpFlags", dIOFlags), u32("TransferSize", dSize),
		u32("Reserved", dNone), u64("ByteOffset", dOffset), ptr("FileObject", dFileKey), ptr("Irp", dIrp),
		u64("HighResResponseTime", dResponse)}
	diskRWV3    = append(append([]field(nil), diskRWV2...), u32("IssuingThreadId", dTTID))
	diskInitV2  = []field{ptr("Irp", dIrp)}
	diskInitV3  = []field{ptr("Irp", dIrp), u32("IssuingThreadId", dTTID)}
	diskFlushV2 = []field{u32("DiskNumber", dDisk), u32("IrpFlags", dIOFlags), u64("HighResResponseTime", dResponse),
		ptr("Irp", dIrp)}
	diskFlushV3 = append(append([]field(nil), diskFlushV2...), u32("IssuingThreadId", dTTID))
)

func addDiskIo(t *table) {
	for _, n := range []struct {
		code uint16
		name string
	}{
		{OpcodeDiskRead, "Read"}, {OpcodeDiskWrite, "Write"}, {OpcodeDiskReadInit, "ReadInit"},
		{OpcodeDiskWriteInit, "WriteInit"}, {OpcodeDiskFlushBuffers, "FlushBuffers"}, {OpcodeDiskFlushInit, "FlushInit"},
		{34, "DrvMjFnCall"}, {35, "DrvMjFnRet"}, {36, "DrvComplRoutine"}, {37, "DrvComplRequest"},
		{52, "DrvComplRequestRet"}, {53, "DrvPrePost"}, {55, "OpticalRead"}, {56, "OpticalWrite"},
		{57, "OpticalFlushBuffers"}, {58, "OpticalReadInit"}, {59, "OpticalWriteInit"}, {60, "OpticalFlushInit"},
	} {
		t.name(ClassDiskIo, n.code, n.name)
	}
	done := spec{kind: KindDiskDone}
	init := spec{kind: KindDiskInit}
	for _, v := range []struct {
		version       uint16
		rw, in, flush []field
	}{{2, diskRWV2, diskInitV2, diskFlushV2}, {3, diskRWV3, diskInitV3, diskFlushV3}} {
		vs := []uint16{v.version}
		done.fields = v.rw
		done.op = event.OpBlockRead
		t.add(ClassDiskIo, []uint16{OpcodeDiskRead}, vs, done)
		done.op = event.OpBlockWrite
		t.add(ClassDiskIo, []uint16{OpcodeDiskWrite}, vs, done)
		done.fields, done.op = v.flush, event.OpBlockFlush
		t.add(ClassDiskIo, []uint16{OpcodeDiskFlushBuffers}, vs, done)
		init.fields = v.in
		init.op = event.OpBlockRead
		t.add(ClassDiskIo, []uint16{OpcodeDiskReadInit}, vs, init)
		init.op = event.OpBlockWrite
		t.add(ClassDiskIo, []uint16{OpcodeDiskWriteInit}, vs, init)
		init.op = event.OpBlockFlush
		t.add(ClassDiskIo, []uint16{OpcodeDiskFlushInit}, vs, init)
	}
	// Driver delay and optical events carry nothing iotrace uses yet.
	t.ignore(ClassDiskIo, 34, 35, 36, 37, 52, 53, 55, 56, 57, 58, 59, 60)
}

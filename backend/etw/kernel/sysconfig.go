package kernel

// SystemConfig opcodes (kernel group 0x0B): the hardware configuration the
// kernel logs at the end of a session.
const (
	OpcodeConfigCPU     = 10
	OpcodeConfigPhyDisk = 11
	OpcodeConfigLogDisk = 12
)

// SysConfig opcodes (KernelTraceControl, written by xperf and relogger
// merges): the volume mapping iotrace needs to turn
// \Device\HarddiskVolumeN into a drive letter.
const (
	OpcodeSysConfigBuildInfo     = 32
	OpcodeSysConfigSystemPaths   = 33
	OpcodeSysConfigUnknownVolume = 34
	OpcodeSysConfigVolumeMapping = 35
)

var (
	// CPU: MHz, NumberOfProcessors, MemSize, PageSize,
	// AllocationGranularity, ComputerName wchar[256], ...
	configCPU = []field{u32("MHz", dMHz), u32("NumberOfProcessors", dProcessors), u32("MemSize", dNone),
		u32("PageSize", dNone), u32("AllocationGranularity", dNone), fixedW("ComputerName", 256, dName)}
	// PhyDisk: DiskNumber @0, geometry, SCSI address, Manufacturer
	// wchar[256] @40, PartitionCount @552, ...
	configPhyDisk = []field{u32("DiskNumber", dDisk), skip("Geometry and SCSI address", 36),
		fixedW("Manufacturer", 256, dName)}
	// LogDisk: StartOffset u64, PartitionSize u64, DiskNumber @16, Size,
	// DriveType, DriveLetterString wchar[4] @28, Pad, PartitionNumber @40,
	// SectorsPerCluster, BytesPerSector, Pad, NumberOfFreeClusters,
	// TotalNumberOfClusters, FileSystem wchar[16] @72.
	configLogDisk = []field{u64("StartOffset", dNone), u64("PartitionSize", dNone), u32("DiskNumber", dDisk),
		u32("Size", dNone), u32("DriveType", dNone), fixedW("DriveLetterString", 4, dName), u32("Pad1", dNone),
		u32("PartitionNumber", dPartition), skip("SectorsPerCluster..TotalNumberOfClusters", 28),
		fixedW("FileSystem", 16, dName2)}
	sysConfigVolumeMapping = []field{wstr("NtPath", dName), wstr("DosPath", dName2)}
	sysConfigSystemPaths   = []field{wstr("SystemDirectory", dName2), wstr("SystemWindowsDirectory", dName)}
)

func addSystemConfig(t *table) {
	names := map[uint16]string{
		10: "CPU", 11: "PhyDisk", 12: "LogDisk", 13: "NIC", 14: "Video", 15: "Services", 16: "Power",
		17: "Network", 18: "OpticalMedia", 21: "IRQ", 22: "PnP", 23: "IDEChannel", 24: "NumaNode",
		25: "Platform", 26: "ProcessorGroup", 27: "ProcessorNumber", 28: "DPI", 29: "CodeIntegrity",
		30: "TelemetryConfig", 31: "Defragmentation", 33: "DeviceFamily", 34: "FlightIds", 35: "Processors",
		36: "Virtualization", 37: "Boot",
	}
	for code, n := range names {
		t.name(ClassSystemConfig, code, n)
	}
	vs := []uint16{0, 1, 2, 3, 4, 5}
	t.add(ClassSystemConfig, []uint16{OpcodeConfigCPU}, vs, spec{kind: KindComputer, fields: configCPU})
	t.add(ClassSystemConfig, []uint16{OpcodeConfigPhyDisk}, vs, spec{kind: KindPhysicalDisk, fields: configPhyDisk})
	t.add(ClassSystemConfig, []uint16{OpcodeConfigLogDisk}, vs, spec{kind: KindLogicalDisk, fields: configLogDisk})
	for code := range names {
		if code != OpcodeConfigCPU && code != OpcodeConfigPhyDisk && code != OpcodeConfigLogDisk {
			t.ignore(ClassSystemConfig, code)
		}
	}

	t.name(ClassSysConfig, OpcodeSysConfigBuildInfo, "BuildInfo")
	t.name(ClassSysConfig, OpcodeSysConfigSystemPaths, "SystemPaths")
	t.name(ClassSysConfig, OpcodeSysConfigUnknownVolume, "UnknownVolume")
	t.name(ClassSysConfig, OpcodeSysConfigVolumeMapping, "VolumeMapping")
	t.name(ClassSysConfig, 36, "Opcode36")
	t.name(ClassSysConfig, 37, "Opcode37")
	vs = []uint16{0, 1, 2, 3}
	t.add(ClassSysConfig, []uint16{OpcodeSysConfigVolumeMapping}, vs, spec{kind: KindVolumeMapping, fields: sysConfigVolumeMapping})
	t.add(ClassSysConfig, []uint16{OpcodeSysConfigSystemPaths}, vs, spec{kind: KindSystemPaths, fields: sysConfigSystemPaths})
	t.ignore(ClassSysConfig, OpcodeSysConfigBuildInfo, OpcodeSysConfigUnknownVolume, 36, 37)
}

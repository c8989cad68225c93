package kernel

// Image opcodes (kernel group 0x14).
const (
	OpcodeImageLoad       = 10
	OpcodeImageUnload     = 2
	OpcodeImageDCStart    = 3
	OpcodeImageDCEnd      = 4
	OpcodeImageKernelBase = 34
)

// Image layouts:
//
//	v0: BaseAddress P, ModuleSize u32, ImageFileName wstr
//	v1: ImageBase P, ImageSize P, ProcessId u32, FileName wstr
//	v2, v3: ImageBase P, ImageSize P, ProcessId u32, ImageChecksum u32,
//	    TimeDateStamp u32, Reserved0 u32 (v3: SignatureLevel u8,
//	    SignatureType u8, u16), DefaultBase P, Reserved1..4 u32, FileName wstr
var (
	imageV0 = []field{ptr("BaseAddress", dImageBase), u32("ModuleSize", dImageSize), wstr("ImageFileName", dName)}
	imageV1 = []field{ptr("ImageBase", dImageBase), ptr("ImageSize", dImageSize), u32("ProcessId", dPid), wstr("FileName", dName)}
	imageV2 = []field{ptr("ImageBase", dImageBase), ptr("ImageSize", dImageSize), u32("ProcessId", dPid),
		u32("ImageChecksum", dChecksum), u32("TimeDateStamp", dTimeDateStamp), u32("Reserved0", dNone), ptr("DefaultBase", dNone),
		skip("Reserved1-4", 16), wstr("FileName", dName)}
)

func addImage(t *table) {
	for _, p := range []struct {
		code  uint16
		name  string
		phase Phase
	}{
		{OpcodeImageLoad, "Load", PhaseStart}, {OpcodeImageUnload, "Unload", PhaseEnd},
		{OpcodeImageDCStart, "DCStart", PhaseDCStart}, {OpcodeImageDCEnd, "DCEnd", PhaseDCEnd},
	} {
		t.name(ClassImage, p.code, p.name)
		for v, l := range [][]field{imageV0, imageV1, imageV2, imageV2} {
			t.add(ClassImage, []uint16{p.code}, []uint16{uint16(v)}, spec{kind: KindImage, phase: p.phase, fields: l})
		}
	}
	t.name(ClassImage, OpcodeImageKernelBase, "KernelBase")
	t.ignore(ClassImage, OpcodeImageKernelBase)
}

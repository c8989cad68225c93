package etl

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/iotrace/iotrace/backend/etw/record"
)

// groupGUIDs maps a kernel event group (EVENT_TRACE_GROUP_*, the high byte
// of a kernel HookId) to the classic event GUID the OS reports for it.
var groupGUIDs = [...]record.GUID{
	0x00: mustGUID("68fdd900-4a3e-11d1-84f4-0000f80464e3"), // EventTrace
	0x01: mustGUID("3d6fa8d4-fe05-11d0-9dda-00c04fd7ba7c"), // DiskIo
	0x02: mustGUID("3d6fa8d3-fe05-11d0-9dda-00c04fd7ba7c"), // PageFault
	0x03: mustGUID("3d6fa8d0-fe05-11d0-9dda-00c04fd7ba7c"), // Process
	0x04: mustGUID("90cbdc39-4a3e-11d1-84f4-0000f80464e3"), // FileIo
	0x05: mustGUID("3d6fa8d1-fe05-11d0-9dda-00c04fd7ba7c"), // Thread
	0x06: mustGUID("9a280ac0-c8e0-11d1-84e2-00c04fb998a2"), // TcpIp
	0x08: mustGUID("bf3a50c5-a9c9-4988-a005-2df0b7c80f80"), // UdpIp
	0x09: mustGUID("ae53722e-c863-11d2-8659-00c04fa321a1"), // Registry
	0x0A: mustGUID("13976d09-a327-438c-950b-7f03192815c7"), // DbgPrint
	0x0B: mustGUID("01853a65-418f-4f36-aefc-dc0f1d2fd235"), // SystemConfig
	0x0E: mustGUID("0268a8b6-74fd-4302-9dd0-6e8f1795c0cf"), // Pool
	0x0F: mustGUID("ce1dbfb4-137e-4da6-87b0-3f59aa102cbc"), // PerfInfo
	0x11: mustGUID("89497f50-effe-4440-8cf2-ce6b1cdcaca7"), // Object
	0x12: mustGUID("e43445e0-0903-48c3-b878-ff0fccebdd04"), // Power
	0x14: mustGUID("2cb15d1d-5fc1-11d2-abe1-00a0c911f518"), // Image
	0x18: mustGUID("def2fe46-7bd6-4b80-bd94-f57fe20d0ce3"), // StackWalk
	0x19: mustGUID("9aec974b-5b8e-4118-9b92-3186d8002ce5"), // UMS
	0x1A: mustGUID("45d8cccd-539f-4b72-a8b7-5c683142609a"), // ALPC
	0x1B: mustGUID("d837ca92-12b9-44a5-ad6a-3a65b3578aa8"), // SplitIo
}

// GroupGUID returns the classic event GUID of kernel event group g, or the
// zero GUID for a group without a known one.
func GroupGUID(g uint8) record.GUID {
	if int(g) < len(groupGUIDs) {
		return groupGUIDs[g]
	}
	return record.GUID{}
}

// ParseGUID parses a GUID in registry form, with or without braces
// ("68fdd900-4a3e-11d1-84f4-0000f80464e3").
func ParseGUID(s string) (record.GUID, error) {
	var g record.GUID
	t := strings.TrimSuffix(strings.TrimPrefix(s, "{"), "}")
	parts := strings.Split(t, "-")
	if len(parts) != 5 || len(parts[0]) != 8 || len(parts[1]) != 4 || len(parts[2]) != 4 || len(parts[3]) != 4 || len(parts[4]) != 12 {
		return g, fmt.Errorf("invalid GUID %q", s)
	}
	b, err := hex.DecodeString(strings.Join(parts, ""))
	if err != nil {
		return g, fmt.Errorf("invalid GUID %q: %w", s, err)
	}
	g.Data1 = uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	g.Data2 = uint16(b[4])<<8 | uint16(b[5])
	g.Data3 = uint16(b[6])<<8 | uint16(b[7])
	copy(g.Data4[:], b[8:])
	return g, nil
}

func mustGUID(s string) record.GUID {
	g, err := ParseGUID(s)
	if err != nil {
		panic(err)
	}
	return g
}

// Package kernel decodes the payloads of the ETW events iotrace needs: the
// kernel FileIo (name events, requests and OpEnd), DiskIo (Init and
// completion), Process, Thread, Image, SystemConfig and EventTrace classes,
// KernelTraceControl's SysConfig volume mapping, and the
// Microsoft-Windows-Kernel-File and Microsoft-Windows-Kernel-Process
// manifest providers.
//
// Decoders are looked up in a table keyed by (class, opcode or event id,
// version, pointer size); see [Key]. Most layouts are declared as field
// lists (one small file per event class) and walked by one generic decoder,
// so that a layout reads like the documentation it comes from
// (docs/etw.md). Decoding is zero-copy: strings in a decoded [Event] alias
// the record's payload and are converted only when asked for. Every read is
// bounds-checked: a truncated payload yields a [*FieldError] that names the
// event, the field and its offset, never a panic.
//
// A record no decoder knows is reported as such by [Decoder.Decode] (ok ==
// false), so the caller can count it by provider and opcode rather than drop
// it silently; [Decoder.Stats] adds those counts to an [event.Stats] (one
// counter per provider for what is not I/O), [Decoder.Undecoded] lists them
// by event.
//
// A [CodeFilter] selects records by class and opcode before any decoding,
// for passes that need only some kinds of events.
package kernel

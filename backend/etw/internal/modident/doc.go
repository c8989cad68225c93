// Package modident turns a Windows trace's Image events into module facts
// with the identities symbol servers need, for package etw's pipeline.
// Written by hand: it pairs records of the trace's own formats.
//
// # Inputs and outputs
//
// Every Image event (load, unload, rundown at the start or the end of the
// session) becomes a module fact (Image): process Pid (0 and ProcStart 0
// for the kernel's drivers), ImageBase as Handle, ImageSize as Size, the
// file as Name (NT paths mapped to drive letters) and, from Image v2 on,
// the PE TimeDateStamp and SizeOfImage as Detail ("pe:%08X%X", the key a
// symbol server files the image under), then "/%08X" and the PE CheckSum
// when the image has one. An unload ends the module; a rundown at the end
// of a module already known is counted, not repeated. The PDB identity
// (GUID, age and name: symbolize.PDBID) goes in Image. Facts come out in
// order through Facts, for the pipeline to emit.
//
// The PDB identity is not in Image events: traces merged by xperf, WPR or
// PerfView carry it in KernelTraceControl ImageID and DbgID_RSDS records,
// logged with the image's own timestamp just before its Image event, and
// traces recorded by iotrace in its own provider's image records
// (ownprovider.Image), which name their image by process and ImageBase:
// a live session puts each right after its Image event; `record -o
// t.etl` writes them when the image's file has been read, so in the file
// they come later than their image (possibly after its unload).
//
// # Phases
//
// A live session: an image is held until a record with a later timestamp
// (Settle) so that the identity records of its time reach it; identities
// that come before their image wait for it (at most 64). A file's first
// pass collects every identity record in any order (Collect; the caller
// keeps the decode errors of those records for the second pass), and
// EndCollect sorts them by time and base; in the second pass each Image
// event takes the identity of its time and base, once, and the iotrace
// identities of its process and base that agree with it (same
// TimeDateStamp, size and file name wherever both sides have them), so
// that an identity of an earlier image at the same base never names a
// later one.
//
// Invariants: the first identity record of an image wins; a record that
// disagrees with it is counted (StatIdentityConflict), once, whether
// found in the first pass or the second; an identity no image takes is
// counted (StatIdentityNoImage, or StatIdentityMismatch for an iotrace
// identity whose image disagrees with it). Counters go to the pipeline's
// tally.Tally; a file's first pass counts nothing itself (its conflicts
// are counted when EndCollect ends it).
package modident

// Package stackjoin joins the kernel's stack walks to the events they
// belong to, for package etw's pipeline. Written by hand: the join follows
// how the Windows kernel logs stacks, which no library models.
//
// # What the kernel logs
//
// The kernel walks the stack of chosen events itself and logs it as a
// StackWalk record right after the event, on the event's processor, with
// the event's timestamp and thread (EventTimeStamp, StackThread): a stack
// belongs to the event with both, as TraceEvent joins them. The user part
// of a kernel event's stack is walked when the thread returns to user
// mode and logged then, shared by the thread's kernel events since its
// last return. With stack caching ("compressed stacks") the parts come as
// references to cache keys, and the keys' frames come in key definitions
// (create, delete, rundown), mostly later: when the kernel evicts a key,
// and at the end of the session for the rest.
//
// # A file: collect, assemble, take
//
// Inputs, in a file's first pass, in the order of each processor's stream
// (not merged by time): every record but stack walks (NoteRecord: its
// time and thread), every stack walk decoded (Stack, DefineKey); in time
// order: every Thread End (ThreadEnd). Assemble then builds each event's
// stack (a kernel part waits for its thread's next user part; a thread
// that ends, or whose ID goes to another process, gives up the user part)
// and sorts the stacks by time and the key definitions by key. Outputs,
// in the second pass, which meets the events in time order: Take gives
// each event its stack (the first not taken of its thread at its time,
// one with a kernel part first), its cache keys resolved (KeyFrames: the
// first deletion or rundown at or after the reference, else the last
// creation before it); Leftover counts the stacks no event took: of a
// record in the trace iotrace does not decode (info), of no record of
// their time and thread (their event was lost: CountLost), user parts
// alone (info).
//
// Invariants: NoteRecord sees every record once, in its processor's
// stream order, whatever the reader caches or merges, so the same stacks
// are told apart however the file is read; the collected records and
// stacks hold no pointers (a file's millions cost the garbage collector
// nothing) and their frames live in an arena of chunks never copied.
//
// Bounds: 8 bytes per record with no thread in its header, 48 per stack
// record (176 while Assemble runs) and 56 per key definition (a repeated
// one kept once), and the frames; time linear in the records but for
// radix sorts and merges of sorted runs. Assemble checks its context at
// least every 65,536 records and between the passes of its sorts; Take
// gives each event its stack in a step however many share its time.
//
// # A live session: keys and holding
//
// A live session's pipeline joins a stack record to a recent pending
// event itself; the Joiner keeps its key definitions (DefineLiveKey, the
// latest 65,536) and resolves a record's parts (LivePart). A complete
// event whose stack still waits for its user part is held by a Holder,
// by thread, until the part comes (GiveUser), the thread ends
// (ThreadEnded: user-lost) or it waited 2 s of trace time (Expire:
// user-lost); what it lets go is Released, in order, for the pipeline to
// emit.
//
// # Interning
//
// Identical stacks get one ID (Interner): the pipeline writes a stack
// once, as a FactStack, before the first event that refers to it.
//
// Counters go to the pipeline's tally.Tally: the one struct the stages
// report through.
package stackjoin

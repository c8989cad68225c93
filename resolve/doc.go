// Package resolve turns the handles in events into names: file descriptors
// and working directories (Linux), FileObjects and FileKeys (Windows),
// process ids, devices and volumes. It keeps bindings with their time
// history, so an event is resolved with the name its handle had when the
// event happened, and it is shared by the live backends and the file
// readers: the facts are captured at record time and applied at read time.
// Tables keep every binding (NewTables) or, to resolve a trace of any
// length in one streaming pass, what Limits allow (NewBoundedTables, with
// Prescan announcing the rundowns written after the events they name).
package resolve

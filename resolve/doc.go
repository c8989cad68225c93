// Package resolve turns the handles in events into names: file descriptors
// and working directories (Linux), FileObjects and FileKeys (Windows),
// process ids, devices and volumes. It keeps every binding with its time
// history, so an event is resolved with the name its handle had when the
// event happened, and it is shared by the live backends and the file
// readers: the facts are captured at record time and applied at read time.
package resolve

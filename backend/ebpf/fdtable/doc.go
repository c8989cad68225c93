// Package fdtable keeps, for every live Linux process, its file descriptor
// table (fd → path, close-on-exec, open flags, inode) and its working
// directory, and updates them the way the kernel does: open and dup bind,
// close and close_range unbind, fork copies the table (or shares it with
// CLONE_FILES, and the cwd with CLONE_FS), exec closes the close-on-exec
// descriptors, exit drops everything, and rename renames open files.
//
// Every change is reported as an [event.Fact] through Table.Emit, so that a
// trace file carries what a reader needs to resolve descriptors later. A
// descriptor or cwd the table has never seen is asked of a [Prober] (the
// /proc fallback) once and remembered.
//
// The package is pure logic: it does no I/O of its own.
package fdtable

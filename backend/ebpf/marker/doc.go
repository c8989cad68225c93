// Package marker carries `iotrace mark TEXT` to every running iotrace
// trace on the machine, so that users can bracket the interesting part of
// a recording.
//
// On Linux each running trace listens on a Unix datagram socket
// DefaultDir/<pid>.sock; Send writes the text with the sender's
// CLOCK_BOOTTIME time (the clock of the eBPF records) to each of them and
// removes sockets nobody listens on any more. The sender's pid comes from
// the kernel (SCM_CREDENTIALS), not from the message.
package marker

//go:build linux && !amd64 && !arm64

package ebpf

// sysNumbers is empty: iotrace knows the system call numbers of amd64 and
// arm64 only, so the backend reports itself unavailable elsewhere.
var sysNumbers = map[sysKind]int{}

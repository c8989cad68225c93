package systable

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestIoctlNames checks the hand-written ioctl codes against x/sys/unix.
func TestIoctlNames(t *testing.T) {
	for name, code := range map[string]uint32{
		"FICLONE": unix.FICLONE, "FICLONERANGE": unix.FICLONERANGE, "FIDEDUPERANGE": unix.FIDEDUPERANGE,
		"FS_IOC_GETFLAGS": unix.FS_IOC_GETFLAGS, "FS_IOC_SETFLAGS": unix.FS_IOC_SETFLAGS,
		"FS_IOC_GETVERSION": 0x80087601,
		"FS_IOC_FSGETXATTR": 0x801c581f, "FS_IOC_FSSETXATTR": 0x401c5820,
		"FIONREAD": 0x541b, "FIONBIO": 0x5421, "FIOCLEX": 0x5451, "FIONCLEX": 0x5450,
		"BLKGETSIZE64": unix.BLKGETSIZE64, "BLKGETSIZE": unix.BLKGETSIZE, "BLKSSZGET": unix.BLKSSZGET,
		"BLKFLSBUF": unix.BLKFLSBUF, "BLKDISCARD": unix.BLKDISCARD,
		"TCGETS": unix.TCGETS, "TCSETS": unix.TCSETS, "TIOCGWINSZ": unix.TIOCGWINSZ,
		"FIBMAP": 1, "FIGETBSZ": 2, "FS_IOC_FIEMAP": 0xc020660b,
	} {
		if got := ioctlNames[code]; got != name {
			t.Errorf("ioctlNames[%#x] = %q, want %q", code, got, name)
		}
	}
}

package blockio

// blkErrno maps blk_status_t values to the errno the kernel reports for
// them (blk_status_to_errno). Values 0 to 13 have been stable since Linux
// 4.13; later ones moved between versions and map to EIO here (the raw
// value stays in the event's Info).
var blkErrno = [...]uint32{
	0:  0,   // BLK_STS_OK
	1:  95,  // BLK_STS_NOTSUPP: EOPNOTSUPP
	2:  110, // BLK_STS_TIMEOUT: ETIMEDOUT
	3:  28,  // BLK_STS_NOSPC: ENOSPC
	4:  67,  // BLK_STS_TRANSPORT: ENOLINK
	5:  121, // BLK_STS_TARGET: EREMOTEIO
	6:  52,  // BLK_STS_RESV_CONFLICT (NEXUS): EBADE
	7:  61,  // BLK_STS_MEDIUM: ENODATA
	8:  84,  // BLK_STS_PROTECTION: EILSEQ
	9:  12,  // BLK_STS_RESOURCE: ENOMEM
	10: 5,   // BLK_STS_IOERR: EIO
	11: 78,  // BLK_STS_DM_REQUEUE: EREMCHG
	12: 11,  // BLK_STS_AGAIN: EAGAIN
	13: 16,  // BLK_STS_DEV_RESOURCE: EBUSY
}

// StatusErrno returns the errno (positive) of a blk_status_t.
func StatusErrno(st uint16) uint32 {
	if int(st) < len(blkErrno) {
		return blkErrno[st]
	}
	return 5 // EIO
}

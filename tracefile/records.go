package tracefile

import "github.com/iotrace/iotrace/event"

// Presence bits of an event: a field is encoded only when its bit is set
// in the event's template mask; otherwise it has its "none" value (-1 for
// FD, Offset and Bytes, ID = previous ID + 1, 0 for the rest).
const (
	mID = 1 << iota
	mDuration
	mWait
	mPath
	mPath2
	mFD
	mFileObject
	mFileKey
	mInode
	mOffset
	mSize
	mBytes
	mCode
	mOpenFlags
	mMode
	mDisposition
	mPriority
	mIOFlags
	mInfo
	mDev
	mSector
	mRequest
	mCause
	mCausedIOs
	mCausedBytes
	mNote
	mStack // from version 3
	// from version 4: a read's page-cache provenance
	mReadCached
	mReadAhead
	mReadDisk
	mReadWaited
	mReadAheadFrom
	mAll = 1<<iota - 1
	// mAllV2 are the bits of versions 1 and 2, mAllV3 those of version 3.
	mAllV2 = mStack - 1
	mAllV3 = mReadCached - 1
	// mProvenance are the bits of a read's page-cache provenance.
	mProvenance = mReadCached | mReadAhead | mReadDisk | mReadWaited | mReadAheadFrom
)

// Presence bits of a fact.
const (
	fRundown = 1 << iota
	fEnd
	fSpace
	fPid
	fProcStart
	fTid
	fPPid
	fHandle
	fDev
	fName
	fImage
	fDetail
	fSize // from version 3
	fOffset
	fVaddr
	fFlags
	fKernel
	fUser
	fAll = 1<<iota - 1
	// fAllV2 are the bits of versions 1 and 2.
	fAllV2 = fSize - 1
)

// template is what events of one kind share: the fields that change
// little, and which of the other fields are present.
type template struct {
	source event.Source
	layer  event.Layer
	op     event.Op
	status event.Status
	flags  event.Flags
	native string
	mask   uint64
}

// threadRef is the issuing thread of an event, with its CPU.
type threadRef struct {
	cpu, pid, tid uint32
	procStart     int64
	comm          string
}

// eventMask returns the presence mask of e given the previous ID. It is
// branch-free: which fields are set varies from event to event.
func eventMask(e *event.Event, prevID uint64) uint64 {
	return b2u(e.ID != prevID+1)*mID |
		b2u(e.Duration != 0)*mDuration |
		b2u(e.Wait != 0)*mWait |
		b2u(e.Path != "")*mPath |
		b2u(e.Path2 != "")*mPath2 |
		b2u(e.FD != -1)*mFD |
		b2u(e.FileObject != 0)*mFileObject |
		b2u(e.FileKey != 0)*mFileKey |
		b2u(e.Inode != 0)*mInode |
		b2u(e.Offset != -1)*mOffset |
		b2u(e.Size != 0)*mSize |
		b2u(e.Bytes != -1)*mBytes |
		b2u(e.Code != 0)*mCode |
		b2u(e.OpenFlags != 0)*mOpenFlags |
		b2u(e.Mode != 0)*mMode |
		b2u(e.Disposition != 0)*mDisposition |
		b2u(e.Priority != 0)*mPriority |
		b2u(e.IOFlags != 0)*mIOFlags |
		b2u(e.Info != 0)*mInfo |
		b2u(e.Dev != event.Device{})*mDev |
		b2u(e.Sector != 0)*mSector |
		b2u(e.Request != 0)*mRequest |
		b2u(e.Cause != 0)*mCause |
		b2u(e.CausedIOs != 0)*mCausedIOs |
		b2u(e.CausedBytes != 0)*mCausedBytes |
		b2u(e.Note != "")*mNote |
		b2u(e.Stack != 0)*mStack |
		b2u(e.ReadCached != 0)*mReadCached |
		b2u(e.ReadAhead != 0)*mReadAhead |
		b2u(e.ReadDisk != 0)*mReadDisk |
		b2u(e.ReadWaited != 0)*mReadWaited |
		b2u(e.ReadAheadFrom != 0)*mReadAheadFrom
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func factMask(f *event.Fact) uint64 {
	var m uint64
	if f.Rundown {
		m |= fRundown
	}
	if f.End {
		m |= fEnd
	}
	if f.Space != 0 {
		m |= fSpace
	}
	if f.Pid != 0 {
		m |= fPid
	}
	if f.ProcStart != 0 {
		m |= fProcStart
	}
	if f.Tid != 0 {
		m |= fTid
	}
	if f.PPid != 0 {
		m |= fPPid
	}
	if f.Handle != 0 {
		m |= fHandle
	}
	if !f.Dev.IsZero() {
		m |= fDev
	}
	if f.Name != "" {
		m |= fName
	}
	if f.Image != "" {
		m |= fImage
	}
	if f.Detail != "" {
		m |= fDetail
	}
	if f.Size != 0 {
		m |= fSize
	}
	if f.Offset != 0 {
		m |= fOffset
	}
	if f.Vaddr != 0 {
		m |= fVaddr
	}
	if f.Flags != 0 {
		m |= fFlags
	}
	if len(f.Kernel) != 0 {
		m |= fKernel
	}
	if len(f.User) != 0 {
		m |= fUser
	}
	return m
}

func devWord(d event.Device) uint64 {
	w := uint64(d.Major) << 1
	if d.IsDisk {
		w |= 1
	}
	return w
}

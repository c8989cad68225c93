package rawbtf

import (
	"errors"
	"sync"
)

// Shared is the kernel's BTF parsed once for several users that run side
// by side (the system-call and block loaders at start-up). The zero value
// is ready; a nil *Shared parses anew at each Get.
type Shared struct {
	mu      sync.Mutex
	parsed  bool
	s       *Spec
	err     error
	release func()
	users   int
	closed  bool
}

// Get returns the parsed kernel BTF, parsing it at the first call. Each
// successful Get is ended by a call of its done, after which s must not
// be used.
func (k *Shared) Get() (s *Spec, done func(), err error) {
	if k == nil {
		return Kernel()
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return nil, nil, errors.New("kernel BTF: read after its release")
	}
	if !k.parsed {
		k.parsed = true
		k.s, k.release, k.err = Kernel()
	}
	if k.err != nil {
		return nil, nil, k.err
	}
	k.users++
	var once sync.Once
	return k.s, func() { once.Do(k.done) }, nil
}

func (k *Shared) done() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.users--
	k.maybeRelease()
}

// Close releases the blob once every Get is done.
func (k *Shared) Close() {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed = true
	k.maybeRelease()
}

func (k *Shared) maybeRelease() {
	if k.closed && k.users == 0 && k.release != nil {
		k.release()
		k.release, k.s = nil, nil
	}
}

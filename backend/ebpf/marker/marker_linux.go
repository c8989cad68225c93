package marker

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// Listener receives markers for one trace.
type Listener struct {
	conn *net.UnixConn
	path string
}

// Listen creates dir (mode 0755) and listens on dir/<pid>.sock. The socket
// is writable by every user, so unprivileged programs can mark a trace
// run as root; a request to save a flight recorder is taken only from
// root or the recording's user (see Read).
func Listen(dir string) (*Listener, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("marker: create %s: %w", dir, err)
	}
	path := filepath.Join(dir, strconv.Itoa(os.Getpid())+".sock")
	_ = os.Remove(path) // a stale socket of an earlier process with our pid
	// Bind under a name senders do not look for, and publish the socket
	// under its real name only once SO_PASSCRED is set: a marker that
	// arrived before would carry no sender pid.
	tmp := path + ".new"
	_ = os.Remove(tmp)
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: tmp, Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("marker: listen on %s: %w", tmp, err)
	}
	if err := os.Chmod(tmp, 0o666); err != nil {
		conn.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("marker: chmod %s: %w", tmp, err)
	}
	rc, err := conn.SyscallConn()
	if err == nil {
		cerr := rc.Control(func(fd uintptr) {
			err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
		})
		if cerr != nil {
			err = cerr
		}
	}
	if err != nil {
		conn.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("marker: SO_PASSCRED on %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		conn.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("marker: publish %s: %w", path, err)
	}
	return &Listener{conn: conn, path: path}, nil
}

// Path returns the socket's path.
func (l *Listener) Path() string { return l.path }

// Read blocks until a marker arrives. Datagrams that are not markers are
// skipped. A save request from a sender that is neither root nor this
// process's user (by the credentials the kernel attaches) comes as a
// marker saying it was refused (Mark.SaveRefused). It returns an error
// wrapping net.ErrClosed after Close.
func (l *Listener) Read() (Mark, error) {
	buf := make([]byte, len(magic)+12+MaxText+1)
	oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred))
	for {
		n, oobn, _, _, err := l.conn.ReadMsgUnix(buf, oob)
		if err != nil {
			return Mark{}, err
		}
		m, err := decode(buf[:n])
		if err != nil {
			continue
		}
		known := false
		if msgs, err := syscall.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for i := range msgs {
				if cred, err := syscall.ParseUnixCredentials(&msgs[i]); err == nil {
					m.Pid, m.Uid, known = uint32(cred.Pid), cred.Uid, true
				}
			}
		}
		guardSave(&m, known, uint32(os.Geteuid()))
		return m, nil
	}
}

// Close stops listening and removes the socket.
func (l *Listener) Close() error {
	err := l.conn.Close()
	if rerr := os.Remove(l.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
		err = rerr
	}
	return err
}

// Send delivers text to every trace listening in dir and returns how many
// got it. Sockets nobody listens on are removed.
func Send(dir, text string) (int, error) {
	socks, err := filepath.Glob(filepath.Join(dir, "*.sock"))
	if err != nil {
		return 0, fmt.Errorf("marker: list %s: %w", dir, err)
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0, fmt.Errorf("marker: read CLOCK_BOOTTIME: %w", err)
	}
	msg := encode(uint64(ts.Nano()), uint32(unix.Gettid()), text)
	sent := 0
	var firstErr error
	for _, s := range socks {
		c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: s, Net: "unixgram"})
		if err == nil {
			_, err = c.Write(msg)
			c.Close()
		}
		switch {
		case err == nil:
			sent++
		case errors.Is(err, syscall.ECONNREFUSED):
			_ = os.Remove(s) // its trace is gone
		case firstErr == nil:
			firstErr = fmt.Errorf("marker: send to %s: %w", s, err)
		}
	}
	return sent, firstErr
}

package server

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// peerOf returns the credentials of the process at the other end of a
// Unix socket connection, from the kernel (SO_PEERCRED).
func peerOf(c net.Conn) (*peer, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil, nil
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("peer credentials: %w", err)
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, fmt.Errorf("peer credentials: %w", err)
	}
	if serr != nil {
		return nil, fmt.Errorf("peer credentials: %w", serr)
	}
	return &peer{uid: cred.Uid, gid: cred.Gid, pid: cred.Pid}, nil
}

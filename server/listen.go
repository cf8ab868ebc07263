package server

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"os/user"
	"strconv"
	"time"
)

// ErrInsecureListen refuses plain HTTP on an address other than loopback.
var ErrInsecureListen = errors.New("plain HTTP on an address other than loopback")

// CheckListen refuses plain HTTP (no TLS) on an address that is not
// loopback, unless insecure is set: tokens would cross the network in
// clear.
func CheckListen(addr string, tls, insecure bool) error {
	if addr == "" || tls || insecure {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if a, err := netip.ParseAddr(host); err == nil && a.Unmap().IsLoopback() {
		return nil
	}
	return fmt.Errorf("listen %s: %w: bearer tokens would cross the network in clear", addr, ErrInsecureListen)
}

// ListenSocket listens on a Unix socket at path, with mode and, when
// group is set, that group. A socket file left by a server that is gone
// is replaced; one a live server answers on is not, nor is any other
// file.
func ListenSocket(path string, mode os.FileMode, group string) (net.Listener, error) {
	gid := -1
	if group != "" {
		g, err := user.LookupGroup(group)
		if err != nil {
			return nil, fmt.Errorf("socket group %s: %w", group, err)
		}
		gid, _ = strconv.Atoi(g.Gid)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("socket %s: a file that is not a socket is there; remove it or name another path", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("socket %s: another server is listening on it", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("socket %s: remove the stale socket: %w", path, err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	if gid >= 0 {
		if err := os.Lchown(path, -1, gid); err != nil {
			ln.Close()
			return nil, fmt.Errorf("socket %s: group %s: %w", path, group, err)
		}
	}
	if err := os.Chmod(path, mode); err != nil {
		ln.Close()
		return nil, fmt.Errorf("socket %s: mode %o: %w", path, mode, err)
	}
	return ln, nil
}

// Package pgtest runs a throwaway PostgreSQL server for tests: initdb in
// a temporary directory, postgres on a free loopback port, removed on
// Stop. PostgreSQL refuses to run as root; as root, the server runs as
// the postgres user.
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver
)

// ErrNoServer reports that the PostgreSQL server binaries are missing.
var ErrNoServer = errors.New("PostgreSQL server binaries (initdb, pg_ctl) not found")

// Required reports whether tests must fail, not skip, without a server
// ($AGENTCTL_REQUIRE_POSTGRES=1, as CI sets).
func Required() bool { return os.Getenv("AGENTCTL_REQUIRE_POSTGRES") == "1" }

// Available reports whether the server binaries are here.
func Available() bool {
	_, err := bindir()
	return err == nil
}

// Server is a running throwaway cluster.
type Server struct {
	dir  string
	bin  string
	port int
	as   string // the OS user the server runs as; "" for the current one
	n    atomic.Int64
}

// bindir finds initdb: on PATH, else in Debian's versioned directories.
func bindir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i], nil
		}
	}
	return "", ErrNoServer
}

// Start initialises and starts a server.
func Start() (*Server, error) {
	bin, err := bindir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "agentctl-pg")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		s.as = "postgres"
		u, err := user.Lookup(s.as)
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root needs the postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chmod(dir, 0o755); err != nil {
			return nil, err
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	data := filepath.Join(dir, "data")
	if out, err := s.cmd("initdb", "-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=200", s.port, dir)
	if out, err := s.cmd("pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "start").CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	return s, nil
}

func (s *Server) cmd(name string, args ...string) *exec.Cmd {
	path := filepath.Join(s.bin, name)
	if s.as != "" {
		return exec.Command("runuser", append([]string{"-u", s.as, "--", path}, args...)...)
	}
	return exec.Command(path, args...)
}

// URL is the address of database name on the server.
func (s *Server) URL(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, name)
}

// NewDB creates an empty database and returns its URL.
func (s *Server) NewDB(ctx context.Context, prefix string) (string, error) {
	name := fmt.Sprintf("%s_%d", strings.ToLower(sanitize(prefix)), s.n.Add(1))
	db, err := sql.Open("pgx", s.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE DATABASE "`+name+`"`); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return s.URL(name), nil
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	out := b.String()
	if len(out) > 40 {
		out = out[len(out)-40:]
	}
	return "t" + out
}

// Stop stops the server and removes its files.
func (s *Server) Stop() {
	s.cmd("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-m", "immediate", "-w", "stop").Run()
	os.RemoveAll(s.dir)
}

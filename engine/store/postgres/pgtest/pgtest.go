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
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver
)

// ErrNoServer reports that the PostgreSQL server binaries are missing.
var ErrNoServer = errors.New("PostgreSQL server binaries (initdb, pg_ctl, pg_resetwal) not found")

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
	opts string // the server's options, for a restart
	n    atomic.Int64
}

// bindir finds the server's programs (initdb, pg_ctl, pg_resetwal): in
// the directory of initdb on PATH, links resolved, else in Debian's
// versioned directories.
func bindir() (string, error) {
	var dirs []string
	if p, err := exec.LookPath("initdb"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			dirs = append(dirs, filepath.Dir(r))
		}
	}
	debian, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.Reverse(debian)
	for _, d := range append(dirs, debian...) {
		if has(d, "initdb", "pg_ctl", "pg_resetwal") {
			return d, nil
		}
	}
	return "", ErrNoServer
}

// has reports whether dir holds every one of the programs.
func has(dir string, programs ...string) bool {
	for _, p := range programs {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			return false
		}
	}
	return true
}

// Start initialises and starts a server whose transaction ids begin at
// FirstXID.
func Start() (*Server, error) { return StartAt(FirstXID) }

// StartAt initialises and starts a server whose first transaction id
// (xid8) is next: of an epoch of 1 or more, its low 32 bits from 2^20
// to 2^31.
func StartAt(next uint64) (*Server, error) {
	// Below 2^20 the id's commit log segment is initdb's own, which age
	// would overwrite.
	if next>>32 == 0 || uint32(next) < 1<<20 || uint32(next) >= 1<<31 {
		return nil, fmt.Errorf("pgtest: next transaction id %d: want an epoch of 1 or more, and 2^20 to 2^31 below it", next)
	}
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
	if err := s.age(data, next); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// The anti-wraparound vacuum would start at once on every database
	// of a cluster this old (its databases' oldest transaction is
	// initdb's); it is not what tests test.
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=200 -c autovacuum_freeze_max_age=2000000000", s.port, dir)
	s.opts = opts
	if out, err := s.cmd("pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "start").CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	return s, nil
}

// FirstXID is the first transaction id (xid8) of a server Start
// starts: past the 32-bit epoch, and ten transactions below a digit
// boundary (10,000,000,000), so that every test meets a long-lived
// cluster's transaction ids and sees them gain a digit, not a fresh
// cluster's (ids that sort as text only by luck).
const FirstXID = 10_000_000_000 - 10

// age makes a new, stopped cluster old: pg_resetwal sets its next
// transaction id, and the commit log gets the zeroed segment that id
// falls in (pg_resetwal does not create it).
func (s *Server) age(data string, next uint64) error {
	epoch, xid := next>>32, uint32(next)
	if out, err := s.cmd("pg_resetwal", "-e", strconv.FormatUint(epoch, 10), "-x", strconv.FormatUint(uint64(xid), 10), "-D", data).CombinedOutput(); err != nil {
		return fmt.Errorf("pg_resetwal: %v\n%s", err, out)
	}
	// A segment holds 32 pages of 32,768 transactions' two status bits;
	// its name is its number in 4 hex digits.
	const perSegment = 32 * 8192 * 4
	seg := filepath.Join(data, "pg_xact", fmt.Sprintf("%04X", xid/perSegment))
	f, err := os.OpenFile(seg, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		_, err = f.Write(make([]byte, 32*8192))
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		return fmt.Errorf("age the cluster: %w", err)
	}
	if s.as == "" {
		return nil
	}
	u, err := user.Lookup(s.as)
	if err != nil {
		return err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(seg, uid, gid)
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

// Restart restarts the server as an operator would (pg_ctl restart -m
// fast): every connection is closed, and the server is back, on the same
// port, when it returns.
func (s *Server) Restart() error {
	data := filepath.Join(s.dir, "data")
	if out, err := s.cmd("pg_ctl", "-D", data, "-o", s.opts, "-l", filepath.Join(s.dir, "log"), "-m", "fast", "-w", "restart").CombinedOutput(); err != nil {
		return fmt.Errorf("pg_ctl restart: %v\n%s", err, out)
	}
	return nil
}

// Stop stops the server and removes its files.
func (s *Server) Stop() {
	s.cmd("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-m", "immediate", "-w", "stop").Run()
	os.RemoveAll(s.dir)
}

package postgres

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentctl/agentctl/engine/store"
)

// TestClassifyServer says what the server refused in words of its own,
// as store.ErrCannotConnect or ErrDenied, never "cannot write".
func TestClassifyServer(t *testing.T) {
	for _, c := range []struct {
		code, msg string
		kind      error
		want      string
	}{
		{"28P01", `password authentication failed for user "bob"`, store.ErrCannotConnect, "authentication failed: password authentication failed for user \"bob\"; check the user and password"},
		{"28000", `no pg_hba.conf entry for host "10.0.0.1"`, store.ErrCannotConnect, "the server refuses the connection: no pg_hba.conf entry"},
		{"3D000", `database "ops" does not exist`, store.ErrCannotConnect, `database "ops" does not exist; create it first`},
		{"42501", `permission denied for table runs`, store.ErrDenied, "the database refused the role: permission denied for table runs (SQLSTATE 42501): it lacks the privilege"},
	} {
		err := classify(fmt.Errorf("connect: %w", &pgconn.PgError{Code: c.code, Message: c.msg}))
		if !errors.Is(err, c.kind) || !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrCannotWrite) {
			t.Errorf("%s: classify = %v, want %v", c.code, err, c.kind)
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: classify = %q, want %q in it", c.code, err, c.want)
		}
	}
}

// TestScrub masks a password an error shows, and keeps what it wraps.
func TestScrub(t *testing.T) {
	inner := errors.New(`lookup s3cret-host: no such host; password s3cret; p@ss`)
	err := Scrub(inner, "postgres://bob:s3cret@db/ops")
	if strings.Contains(err.Error(), "s3cret") || !errors.Is(err, inner) {
		t.Errorf("Scrub = %q", err)
	}
	err = Scrub(errors.New("bad: a b'c"), `host=db password='a b\'c'`)
	if strings.Contains(err.Error(), "a b'c") {
		t.Errorf("Scrub = %q", err)
	}
	if Scrub(nil, "x") != nil {
		t.Error("Scrub(nil) is not nil")
	}
}

package postgres

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentctl/agentctl/engine/store"
)

// classify maps PostgreSQL failures to the store's sentinels, saying
// what failed in words of its own: a failed connection is
// store.ErrCannotConnect, with whether the server was unreachable,
// refused the user, or failed TLS.
func classify(err error) error {
	if err == nil || errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrOutcomeUnknown) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return classifyServer(err, pe)
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	if !errors.As(err, &ce) && !errors.As(err, &ne) {
		if lost(err) {
			return &classified{kind: store.ErrCannotConnect, err: err,
				msg: fmt.Sprintf("the connection to the database server was lost (%v); nothing was changed", deepest(err))}
		}
		return err
	}
	at := "the server"
	if ce != nil && ce.Config != nil {
		at = fmt.Sprintf("the server at %s", net.JoinHostPort(ce.Config.Host, fmt.Sprint(ce.Config.Port)))
	}
	cause := deepest(err)
	var dns *net.DNSError
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	switch {
	case errors.As(err, &cv), errors.As(err, &ua), errors.As(err, &hn), isTLS(err):
		return &classified{kind: store.ErrCannotConnect, err: err,
			msg: fmt.Sprintf("TLS with %s failed: %v; check sslmode and sslrootcert, and the server's certificate", at, cause)}
	case errors.As(err, &dns):
		return &classified{kind: store.ErrCannotConnect, err: err,
			msg: fmt.Sprintf("cannot reach %s: no such host %q", at, dns.Name)}
	}
	return &classified{kind: store.ErrCannotConnect, err: err,
		msg: fmt.Sprintf("cannot reach %s: %v; check the host and port, and that the server runs", at, cause)}
}

// classifyServer maps an error the server reported.
func classifyServer(err error, pe *pgconn.PgError) error {
	switch {
	case pe.Code == "55P03" || pe.Code == "57014": // lock_not_available, query_canceled (lock_timeout)
		return fmt.Errorf("%w: %v; nothing was changed", store.ErrBusy, err)
	case pe.Code == "28P01": // invalid_password
		return &classified{kind: store.ErrCannotConnect, err: err,
			msg: fmt.Sprintf("authentication failed: %s; check the user and password (in the URL, $PGPASSWORD or ~/.pgpass)", pe.Message)}
	case strings.HasPrefix(pe.Code, "28"): // invalid_authorization_specification
		return &classified{kind: store.ErrCannotConnect, err: err,
			msg: fmt.Sprintf("the server refuses the connection: %s; its pg_hba.conf says who may connect from where, and how", pe.Message)}
	case pe.Code == "3D000": // invalid_catalog_name
		return &classified{kind: store.ErrCannotConnect, err: err,
			msg: pe.Message + "; create it first (createdb)"}
	case pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03" || strings.HasPrefix(pe.Code, "08"):
		// admin_shutdown, crash_shutdown, cannot_connect_now, connection_exception
		return &classified{kind: store.ErrCannotConnect, err: err,
			msg: fmt.Sprintf("the database server is restarting or closed the connection: %s (SQLSTATE %s); nothing was changed", pe.Message, pe.Code)}
	case pe.Code == "42P01" && (strings.Contains(pe.Message, `"tokens"`) || strings.Contains(pe.Message, `"sessions"`)):
		// undefined_table: the search_path skips a schema the role may
		// not use, and credentials live in one of their own.
		return &classified{kind: store.ErrDenied, err: err,
			msg: "the role may not read credentials (tokens and browser sessions, kept in the schema " + PrivateSchema + "): use the role that owns the database; nothing was changed"}
	case pe.Code == "42501": // insufficient_privilege
		return &classified{kind: store.ErrDenied, err: err,
			msg: fmt.Sprintf("%s (SQLSTATE 42501): it lacks the privilege; nothing was changed", pe.Message)}
	case strings.HasPrefix(pe.Code, "XX"):
		return fmt.Errorf("%w: %v", store.ErrCorrupt, err)
	}
	return err
}

// isTLS reports whether a connection failed in its TLS handshake, or
// because the server does not offer TLS.
func isTLS(err error) bool {
	var re tls.RecordHeaderError
	var ae tls.AlertError
	msg := err.Error()
	return errors.As(err, &re) || errors.As(err, &ae) ||
		strings.Contains(msg, "server refused TLS connection") || strings.Contains(msg, "tls: ")
}

// deepest is the innermost cause of err: what failed, without pgx's
// wrapping (which repeats the user and database for each address tried).
func deepest(err error) error {
	for {
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			next := u.Unwrap()
			if next == nil {
				return err
			}
			err = next
		case interface{ Unwrap() []error }:
			all := u.Unwrap()
			if len(all) == 0 {
				return err
			}
			err = all[0]
		default:
			return err
		}
	}
}

// classified is a failure with the store's sentinel for it and a message
// of its own; it unwraps to both.
type classified struct {
	msg  string
	kind error
	err  error
}

func (e *classified) Error() string   { return e.kind.Error() + ": " + e.msg }
func (e *classified) Unwrap() []error { return []error{e.kind, e.err} }

// lost reports a connection that broke under a statement: closed, or
// cut mid-answer.
func lost(err error) bool {
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "unexpected EOF")
}

// commitUnknown says whether a failed COMMIT, or a statement outside a
// transaction, may have taken effect: the connection broke once it may
// have been sent. An answer from the server (a PgError) means it did
// not; so does a connection that could not be made, or that database/sql
// found closed or cancelled before it sent anything. pgconn's
// SafeToRetry is not enough: a COMMIT cut after it was sent reads as
// "conn closed", safe to retry (TestCommitOutcomeUnknown).
func commitUnknown(err error) bool {
	var pe *pgconn.PgError
	var ce *pgconn.ConnectError
	switch {
	case err == nil, errors.As(err, &pe), errors.As(err, &ce), errors.Is(err, sql.ErrTxDone), errors.Is(err, driver.ErrBadConn),
		err == context.Canceled, err == context.DeadlineExceeded: // database/sql's, before the commit
		return false
	}
	return true
}

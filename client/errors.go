package client

import (
	"fmt"
	"time"

	"github.com/agentctl/agentctl/api"
)

// Exit codes of the CLI the errors map to (see agentctl --help).
const (
	exitError     = 1
	exitUsage     = 2
	exitConflict  = 4
	exitForbidden = 5
	exitDatabase  = 6
	exitUnknown   = 8
)

// Error is an error object the server answered with, and the HTTP status
// it came with.
type Error struct {
	Status int
	API    api.Error
	// RetryAfter is how long a rate-limited request (429) should wait.
	RetryAfter time.Duration
}

func (e *Error) Error() string { return e.API.Message }

// ExitCode is the CLI's exit code for the error: invalid, unauthenticated,
// not_found, too_large and key_reused 2, forbidden 5, conflict 4,
// rate_limited 1, unavailable 6, outcome_unknown 8; an unknown code by
// its HTTP status.
func (e *Error) ExitCode() int {
	switch e.API.Code {
	case api.CodeInvalid, api.CodeUnauthenticated, api.CodeNotFound, api.CodeTooLarge:
		return exitUsage
	case api.CodeForbidden:
		return exitForbidden
	case api.CodeConflict:
		return exitConflict
	case api.CodeRateLimited:
		return exitError
	case api.CodeUnavailable:
		return exitDatabase
	case api.CodeOutcomeUnknown:
		return exitUnknown
	case api.CodeKeyReused:
		return exitUsage
	}
	if c := api.CodeOf(e.Status); c != "" {
		return (&Error{API: api.Error{Code: c}}).ExitCode()
	}
	return exitError
}

// Ambiguous returns the run ids an ambiguous run id prefix matched, if
// that is what the error says.
func (e *Error) Ambiguous() []string {
	var ids []string
	for _, d := range e.API.Details {
		ids = append(ids, d.Matches...)
	}
	return ids
}

// UnreachableError is a server that could not be reached or did not
// answer: refused, unknown host, TLS failure, timeout. The CLI exits 6.
type UnreachableError struct {
	Server string
	Err    error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("server %s cannot be reached: %v", e.Server, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// ExitCode is 6, as for a database that cannot be used.
func (e *UnreachableError) ExitCode() int { return exitDatabase }

// Object is the error object the CLI prints under -o json.
func (e *UnreachableError) Object() api.Error {
	return api.Error{Code: api.CodeUnavailable, Message: e.Error(), Hint: "check the server address (--server, AGENTCTL_SERVER) and that agentctl serve is running"}
}

// UnknownOutcomeError is a change whose answer was lost: the request may
// have reached the server, and repeating it (with its idempotency key)
// did not tell. The CLI exits 8.
type UnknownOutcomeError struct {
	Server string
	Err    error // the last attempt's failure
}

func (e *UnknownOutcomeError) Error() string {
	return fmt.Sprintf("no answer from server %s (%v): the change may or may not have been made", e.Server, e.Err)
}

func (e *UnknownOutcomeError) Unwrap() error { return e.Err }

// ExitCode is 8: the outcome is unknown.
func (e *UnknownOutcomeError) ExitCode() int { return exitUnknown }

// Object is the error object the CLI prints under -o json.
func (e *UnknownOutcomeError) Object() api.Error {
	return api.Error{Code: api.CodeOutcomeUnknown, Message: e.Error(),
		Hint: "read the run (agentctl show RUN) before trying again"}
}

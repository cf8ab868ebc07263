package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentctl/agentctl/internal/names"
)

// ErrNameRefused is the class of a name a request brings that the
// server refuses (NameError).
var ErrNameRefused = errors.New("name refused")

// NameError is a user or group name a request brought, refused: outside
// the server's name profile, or like another known principal's name.
// Nothing is recorded under it.
type NameError struct {
	Source string // where the name came from: "the proxy's header X-Forwarded-User", "token user"
	Name   string
	Err    error // a *names.Error or a *names.LookAlikeError
}

func (e *NameError) Error() string { return fmt.Sprintf("%s %q: %v", e.Source, e.Name, e.Err) }

// Is makes a NameError ErrNameRefused.
func (e *NameError) Is(target error) bool { return target == ErrNameRefused }

func (e *NameError) Unwrap() error { return e.Err }

// checkName checks a name a request brings, from source, against the
// server's name profile and, when it allows Unicode names, against the
// known principals: the users and groups its configuration and its
// specs name and, with tokens, those of its tokens (the ones that
// created, revoked or expired, are still names in the audit trail).
func (s *Server) checkName(ctx context.Context, source, name string, tokens bool) error {
	if err := s.cfg.NameProfile().Check(name); err != nil {
		return &NameError{Source: source, Name: name, Err: err}
	}
	if !s.cfg.Names.Unicode {
		return nil
	}
	if err := s.cfg.known.LookAlike(name); err != nil {
		return &NameError{Source: source, Name: name, Err: err}
	}
	if err := s.specs.LookAlike(name); err != nil {
		return &NameError{Source: source, Name: name, Err: err}
	}
	if !tokens {
		return nil
	}
	toks, err := s.store.Tokens(ctx)
	if err != nil {
		return fmt.Errorf("check %s %q against the tokens' users: %w", source, name, err)
	}
	for _, t := range toks {
		for i, other := range append([]string{t.User}, t.Groups...) {
			if names.Confusable(name, other) {
				where := "the user of token " + t.ID
				if i > 0 {
					where = "a group of token " + t.ID
				}
				return &NameError{Source: source, Name: name, Err: &names.LookAlikeError{Name: name, Other: other, Where: where}}
			}
		}
	}
	return nil
}

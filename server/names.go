package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

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

// Which tokens' names checkName holds a name against.
const (
	noTokens     = iota // none: the name is a token's own (they were checked against each other at token create)
	cachedTokens        // as read at most TokenRecheck ago: the proxy's header, on every request
	freshTokens         // as they are now: "as", in a decision or a message
)

// checkName checks a name a request brings, from source, against the
// server's name profile and, when it allows Unicode names, against the
// known principals: the users and groups its configuration and its
// specs name and, as tokens says, those of its tokens (revoked and
// expired ones too: their names are in the audit trail).
func (s *Server) checkName(ctx context.Context, source, name string, tokens int) error {
	if err := s.cfg.NameProfile().Check(name); err != nil {
		return &NameError{Source: source, Name: name, Err: err}
	}
	if !s.cfg.Names.Unicode {
		return nil
	}
	err := s.cfg.known.LookAlike(name)
	if err == nil {
		err = s.specs.LookAlike(name)
	}
	if err == nil && tokens != noTokens {
		var known *names.Known
		if known, err = s.tokenNames.get(ctx, s, tokens == freshTokens); err != nil {
			return fmt.Errorf("check %s %q against the tokens' users: %w", source, name, err)
		}
		err = known.LookAlike(name)
	}
	if err != nil {
		return &NameError{Source: source, Name: name, Err: err}
	}
	return nil
}

// tokenNames are the users and groups of the server's tokens, as read
// last: reading them takes 0.3 ms with 100 tokens on SQLite, too long
// for every request through the proxy.
type tokenNames struct {
	mu    sync.Mutex
	read  time.Time
	known *names.Known
}

// get returns the tokens' names, read again when fresh is asked for or
// they were read more than TokenRecheck ago.
func (t *tokenNames) get(ctx context.Context, s *Server, fresh bool) (*names.Known, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !fresh && t.known != nil && s.now().Sub(t.read) < s.opts.TokenRecheck {
		return t.known, nil
	}
	toks, err := s.store.Tokens(ctx)
	if err != nil {
		return nil, err
	}
	known := &names.Known{}
	for _, tok := range toks {
		_ = known.Add(tok.User, "the user of token "+tok.ID) // look-alikes among them were refused at token create
		for _, g := range tok.Groups {
			_ = known.Add(g, "a group of token "+tok.ID)
		}
	}
	t.known, t.read = known, s.now()
	return known, nil
}

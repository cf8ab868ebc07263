package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/internal/duration"
)

// waitOf reads ?wait=: how long a request waits for its run to come to
// rest (default limits.wait, at most limits.maxWait).
func (s *Server) waitOf(r *http.Request) (time.Duration, error) {
	v := r.URL.Query().Get("wait")
	if v == "" {
		return s.cfg.wait[0], nil
	}
	d, err := duration.Parse(v)
	if err != nil || d < 0 {
		return 0, invalid(fmt.Sprintf("wait %q: want a duration such as 30s", v), api.Detail{Pointer: "/wait", Message: "not a duration"})
	}
	return min(d, s.cfg.wait[1]), nil
}

// checkAs refuses an "as" that could not name a user (checkName).
func (s *Server) checkAs(ctx context.Context, as string) error {
	if as == "" {
		return nil
	}
	err := s.checkName(ctx, "as", as, freshTokens)
	var ne *NameError
	if errors.As(err, &ne) {
		return invalid(err.Error(), api.Detail{Pointer: "/as", Message: ne.Err.Error()})
	}
	return err
}

// op is what a request asks the engine to do: it calls committed with the
// run's id once what it changes is committed, then advances the run. It
// calls lostOf(ctx) with the run's id when the answer to its COMMIT is
// lost, before it finds out what the COMMIT did.
type op func(ctx context.Context, committed func(runID string)) (*engine.RunView, error)

type lostKey struct{}

// lostOf is the function an op calls when its COMMIT's answer is lost:
// the request is answered outcome_unknown, while the op goes on.
func lostOf(ctx context.Context) func(runID string) {
	if f, ok := ctx.Value(lostKey{}).(func(string)); ok {
		return f
	}
	return func(string) {}
}

// act runs op in the background, under the server's lifetime rather than
// the request's, and waits until it ends; once op has committed, only up
// to wait (or until the server stops, or the client leaves). done reports
// that op ended; otherwise it goes on advancing the run, and Wait waits
// for it. An op that commits nothing (continue) names its run as
// pending: it is waited for up to wait from the start, and an error it
// ends with meanwhile is the answer.
func (s *Server) act(r *http.Request, wait time.Duration, pending string, f op) (runID string, done bool, err error) {
	committed, lost := make(chan string, 1), make(chan string, 1)
	var once, onceLost sync.Once
	mark := func(id string) { once.Do(func() { committed <- id }) }
	markLost := func(id string) { onceLost.Do(func() { lost <- id }) }
	type outcome struct {
		v   *engine.RunView
		err error
	}
	res := make(chan outcome, 1)
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		v, err := f(context.WithValue(s.work, lostKey{}, markLost), mark)
		res <- outcome{v, err}
	}()
	var o outcome
	if pending != "" {
		runID = pending
	} else {
		// Nothing is answered before the change is committed, or refused.
		select {
		case o = <-res:
			select {
			case runID = <-committed:
				return runID, true, s.afterCommit(r, runID, o.err)
			default:
				if o.err != nil || o.v == nil {
					return "", true, o.err // refused: nothing was committed
				}
				return o.v.RunID, true, nil
			}
		case runID = <-committed:
		case runID = <-lost:
			// The op goes on, finding out what its COMMIT did and
			// advancing the run if it did.
			return runID, true, fmt.Errorf("run %s: %w", runID, store.ErrOutcomeUnknown)
		}
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case o = <-res:
	case <-t.C:
		return runID, false, nil
	case <-s.stopped:
		return runID, false, nil
	case <-r.Context().Done():
		return runID, false, nil
	}
	if pending != "" {
		return runID, true, o.err
	}
	return runID, true, s.afterCommit(r, runID, o.err)
}

// afterCommit logs what went wrong advancing a run after its change was
// committed (the server stopping, a lease lost): the change stands, and
// the answer is the run as it is.
func (s *Server) afterCommit(r *http.Request, runID string, err error) error {
	if err != nil {
		s.log.Warn("advance after a committed change", "id", requestID(r), "run", runID, "err", err.Error())
	}
	return nil
}

// answer writes run id as show -o json prints it: with code when the
// run is at rest after the request, else 202 (it is still advancing).
func (s *Server) answer(w http.ResponseWriter, r *http.Request, id string, done bool, code int) error {
	d, err := s.eng.Detail(context.WithoutCancel(r.Context()), id)
	if err != nil {
		return err
	}
	if !done || d.Status == store.Running || d.Status == store.Queued {
		code = http.StatusAccepted
	}
	writeJSON(w, code, d)
	return nil
}

// decide serves a decision route: approve, decline, resume, retry or
// resolve. The approver policy is the engine's, applied to the caller;
// a refusal is audited there.
func (s *Server) decide(action store.Action) handler {
	return func(w http.ResponseWriter, r *http.Request, p *Principal) error {
		var req api.DecisionRequest
		if err := s.decode(w, r, &req); err != nil {
			return err
		}
		if err := checkFields(action, &req); err != nil {
			return err
		}
		if err := s.checkSizes(0, field{"reason", len(req.Reason)}, field{"args", len(req.Args)}, field{"data", len(req.Data)},
			field{"output", len(req.Output)}); err != nil {
			return err
		}
		if err := s.checkAs(r.Context(), req.As); err != nil {
			return err
		}
		id, err := s.resolveID(r, p, false)
		if err != nil {
			return err
		}
		wait, err := s.waitOf(r)
		if err != nil {
			return err
		}
		by := req.As
		if by == p.Name {
			by = ""
		}
		d := engine.Decision{RunID: id, CallID: req.Call, All: req.All, Action: action, By: by, OSUser: p.Name,
			Reason: req.Reason, Args: req.Args, Always: req.Always, Data: req.Data, Output: req.Output, Failed: req.Failed, Preview: req.PreviewDigest,
			Detach: req.Detach, Auth: s.authority(r.Context(), p), NoView: true, // answered from a read of its own
			Request: requestOf(r.Context())}
		_, done, err := s.act(r, wait, "", func(ctx context.Context, committed func(string)) (*engine.RunView, error) {
			d.Recorded = func() { committed(id) }
			d.Unknown = func() { lostOf(ctx)(id) }
			v, err := s.eng.Decide(ctx, d)
			if err == nil {
				committed(id)
			}
			return v, err
		})
		if err != nil {
			return err
		}
		return s.answer(w, r, id, done, http.StatusOK)
	}
}

// checkFields refuses the fields of a decision its action does not take,
// as the CLI's flags are each its command's.
func checkFields(action store.Action, req *api.DecisionRequest) error {
	var details []api.Detail
	bad := func(field string, set bool, only string) {
		if set {
			details = append(details, api.Detail{Pointer: "/" + field, Message: fmt.Sprintf("only %s takes %s", only, field)})
		}
	}
	bad("args", req.Args != nil && action != store.Approve, "approve")
	bad("always", req.Always && action != store.Approve, "approve")
	bad("previewDigest", req.PreviewDigest != "" && action != store.Approve, "approve")
	bad("data", req.Data != nil && action != store.Resume, "resume")
	bad("output", req.Output != "" && action != store.Resolve, "resolve")
	bad("failed", req.Failed && action != store.Resolve, "resolve")
	if req.All && req.Call != "" {
		details = append(details, api.Detail{Pointer: "/all", Message: "give call or all, not both"})
	}
	if details != nil {
		return invalid(fmt.Sprintf("%s: fields it does not take", action), details...)
	}
	return nil
}

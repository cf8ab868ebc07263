package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/spec"
)

// List page sizes.
const (
	defaultLimit = 100
	maxLimit     = 1000
)

// resolve checks the request's run id (a prefix, for readers) and
// returns the full id of the one run it names: 404 when none does, 400
// with the matches when several do, 400 for a prefix from one who is no
// reader.
func (s *Server) resolve(r *http.Request, who *Principal) (string, error) {
	return s.resolveID(r, who, true)
}

// resolveID is resolve; with check false, a whole run id is returned
// unread, for a route whose engine call reads the run and says 404 if
// there is none (a decision).
func (s *Server) resolveID(r *http.Request, who *Principal, check bool) (string, error) {
	ctx, prefix := r.Context(), r.PathValue("id")
	p := strings.ToUpper(prefix)
	if p == "" || len(p) > 26 || strings.Trim(p, "0123456789ABCDEFGHJKMNPQRSTVWXYZ") != "" {
		return "", invalid(fmt.Sprintf("invalid run id %q: run ids are 26 characters of 0-9 and A-Z (no I, L, O, U); any unique prefix works", prefix),
			api.Detail{Pointer: "/id", Message: "not a run id"})
	}
	if len(p) == 26 {
		if !check {
			return p, nil
		}
		if _, err := s.store.Run(ctx, p); err != nil {
			return "", err
		}
		return p, nil
	}
	if !s.has(who, RoleReader) {
		// Prefixes are for readers: answered for anyone, they would let
		// a caller without a role find every run id by search.
		return "", invalid(fmt.Sprintf("run id %q: give the whole run id (26 characters): prefixes are for readers", prefix),
			api.Detail{Pointer: "/id", Message: "a prefix"})
	}
	return s.eng.Resolve(ctx, p)
}

// limitOf reads ?limit=.
func limitOf(r *http.Request) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return defaultLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxLimit {
		return 0, invalid(fmt.Sprintf("limit %q: want 1 to %d", v, maxLimit), api.Detail{Pointer: "/limit", Message: "out of range"})
	}
	return n, nil
}

// statuses are the run statuses a list may filter on.
var statuses = []store.Status{store.Queued, store.Running, store.Suspended, store.Completed, store.Failed, store.Stalled}

// listRuns is GET /v1/runs: newest first, a page at a time.
func (s *Server) listRuns(w http.ResponseWriter, r *http.Request, _ *Principal) error {
	q := r.URL.Query()
	n, err := limitOf(r)
	if err != nil {
		return err
	}
	f := store.Filter{Status: store.Status(q.Get("status")), Agent: q.Get("agent"), Limit: n, Before: strings.ToUpper(q.Get("cursor"))}
	if f.Status != "" && !slices.Contains(statuses, f.Status) {
		return invalid(fmt.Sprintf("status %q: want one of %v", f.Status, statuses), api.Detail{Pointer: "/status", Message: "unknown status"})
	}
	if v := q.Get("roots"); v != "" {
		if f.Roots, err = strconv.ParseBool(v); err != nil {
			return invalid(fmt.Sprintf("roots %q: want true or false", v), api.Detail{Pointer: "/roots", Message: "not a boolean"})
		}
	}
	runs, err := s.eng.List(r.Context(), f)
	if err != nil {
		return err
	}
	out := api.List[*engine.RunView]{Items: runs}
	if out.Items == nil {
		out.Items = []*engine.RunView{}
	}
	if len(runs) == n {
		out.Next = runs[len(runs)-1].RunID
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// treeNode is a run of a tree with the runs under it.
type treeNode struct {
	engine.RunView
	ParentCall string     `json:"parentCall,omitempty"`
	Children   []treeNode `json:"children"`
}

// withTree is a run as show -o json prints it, with its children.
type withTree struct {
	*engine.RunDetail
	Children []treeNode `json:"children"`
}

// getRun is GET /v1/runs/{id}: the run as show -o json prints it;
// ?tree=true adds the runs under it, nested.
func (s *Server) getRun(w http.ResponseWriter, r *http.Request, p *Principal) error {
	ctx := r.Context()
	id, err := s.resolve(r, p)
	if err != nil {
		return err
	}
	d, err := s.eng.Detail(ctx, id)
	if err != nil {
		return err
	}
	tree := false
	if v := r.URL.Query().Get("tree"); v != "" {
		if tree, err = strconv.ParseBool(v); err != nil {
			return invalid(fmt.Sprintf("tree %q: want true or false", v), api.Detail{Pointer: "/tree", Message: "not a boolean"})
		}
	}
	if !tree {
		writeJSON(w, http.StatusOK, d)
		return nil
	}
	t, err := s.eng.Tree(ctx, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, withTree{RunDetail: d, Children: childrenOf(t, id)})
	return nil
}

// childrenOf nests the runs under id of a tree listed depth first.
func childrenOf(t []engine.TreeRun, id string) []treeNode {
	out := []treeNode{}
	i := slices.IndexFunc(t, func(n engine.TreeRun) bool { return n.RunID == id })
	if i < 0 {
		return out
	}
	var build func(i int) ([]treeNode, int)
	build = func(i int) ([]treeNode, int) {
		kids, depth, j := []treeNode{}, t[i].Depth, i+1
		for j < len(t) && t[j].Depth > depth {
			n := treeNode{RunView: t[j].RunView, ParentCall: t[j].ParentCall}
			n.Children, j = build(j)
			kids = append(kids, n)
		}
		return kids, j
	}
	out, _ = build(i)
	return out
}

// startRun is POST /v1/runs: a run of a configured agent or, for authors,
// of an uploaded spec.
func (s *Server) startRun(w http.ResponseWriter, r *http.Request, p *Principal) error {
	var req api.StartRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	// A spec's exec tools run on the server's host: only authors may send
	// one, and it is not even parsed for anyone else.
	if req.Spec != "" && !s.has(p, RoleAuthor) {
		return forbidden("uploading a spec needs the author role; %s has %s (a spec's tools run on the server's host)", p.Name, rolesText(s.roles.of(p)))
	}
	if err := s.checkSizes(len(req.Spec), field{"input", len(req.Input)}); err != nil {
		return err
	}
	var details []api.Detail
	if req.Agent == "" {
		details = append(details, api.Detail{Pointer: "/agent", Message: "required"})
	}
	if strings.TrimSpace(req.Input) == "" {
		details = append(details, api.Detail{Pointer: "/input", Message: "required"})
	}
	if details != nil {
		return invalid("a run needs an agent and an input", details...)
	}
	g, err := s.graphFor(req.Spec, p)
	if err != nil {
		return err
	}
	wait, err := s.waitOf(r)
	if err != nil {
		return err
	}
	opts := engine.StartOptions{Agent: req.Agent, Input: req.Input, RequireApproval: req.RequireApproval, Model: req.Model,
		Detach: req.Detach, Labels: req.Labels, StartedBy: p.Name, Request: requestOf(r.Context())}
	id, done, err := s.act(r, wait, "", func(ctx context.Context, committed func(string)) (*engine.RunView, error) {
		opts.Created = committed
		v, err := s.eng.Start(ctx, g, opts)
		if v != nil {
			committed(v.RunID)
		}
		return v, err
	})
	if err != nil {
		return err
	}
	return s.answer(w, r, id, done, http.StatusCreated)
}

// graphFor compiles a spec p uploaded, or returns the configured specs.
// An uploaded spec is refused (403) when it asks for what the uploads:
// section, the roles or the configured specs do not allow.
func (s *Server) graphFor(text string, p *Principal) (*engine.Graph, error) {
	if text == "" {
		g := s.specs.Graph()
		if g == nil {
			return nil, invalid("this server has no specs loaded: name them in its configuration (specs:), or upload one (spec, authors only)")
		}
		return g, nil
	}
	sp, err := spec.Load([]spec.Source{{Name: "spec", Data: []byte(text)}})
	if err != nil {
		return nil, err
	}
	if errs := s.uploadProblems(sp); len(errs) > 0 {
		return nil, refusedUpload(errs)
	}
	up := engine.Upload{By: p.Name, Digest: engine.Digest([]byte(text)), Every: s.cfg.Uploads.every()}
	g, err := s.eng.CompileUpload(sp, up)
	if err != nil {
		return nil, invalid(fmt.Sprintf("compile the spec: %v", err), api.Detail{Pointer: "/spec", Message: err.Error()})
	}
	return g, nil
}

// continueRun is POST /v1/runs/{id}/continue.
func (s *Server) continueRun(w http.ResponseWriter, r *http.Request, p *Principal) error {
	var req struct{}
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	id, err := s.resolve(r, p)
	if err != nil {
		return err
	}
	wait, err := s.waitOf(r)
	if err != nil {
		return err
	}
	// Nothing to record: the run goes on from its checkpoint.
	_, done, err := s.act(r, wait, id, func(ctx context.Context, _ func(string)) (*engine.RunView, error) {
		return s.eng.Continue(ctx, id)
	})
	if err != nil {
		return err
	}
	return s.answer(w, r, id, done, http.StatusOK)
}

// send is POST /v1/runs/{id}/send.
func (s *Server) send(w http.ResponseWriter, r *http.Request, p *Principal) error {
	var req api.SendRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.Text) == "" {
		return invalid("a message needs text", api.Detail{Pointer: "/text", Message: "required"})
	}
	if err := s.checkSizes(0, field{"text", len(req.Text)}); err != nil {
		return err
	}
	if err := s.checkAs(r.Context(), req.As); err != nil {
		return err
	}
	id, err := s.resolve(r, p)
	if err != nil {
		return err
	}
	wait, err := s.waitOf(r)
	if err != nil {
		return err
	}
	m := engine.Message{RunID: id, Text: req.Text, By: req.As, OSUser: p.Name, Auth: s.authority(r.Context(), p)}
	_, done, err := s.act(r, wait, "", func(ctx context.Context, committed func(string)) (*engine.RunView, error) {
		m.Recorded = func() { committed(id) }
		return s.eng.Send(ctx, m)
	})
	if err != nil {
		return err
	}
	return s.answer(w, r, id, done, http.StatusOK)
}

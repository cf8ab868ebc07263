package client

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
)

// Answer is the server's answer to a command that advances a run: the
// run, and whether it came to rest before the answer (200), or was still
// advancing when the server stopped waiting (202: follow its events until
// it rests, see Client.Rest).
type Answer struct {
	Run  *engine.RunDetail
	Done bool
}

// Start starts a run (POST /v1/runs). The server waits up to wait for it
// to rest (0: the server's default).
func (c *Client) Start(ctx context.Context, req api.StartRequest, wait time.Duration) (*Answer, error) {
	return c.advance(ctx, "/v1/runs", req, wait, newKey())
}

// Decide records a decision on a run's calls (POST
// /v1/runs/{id}/ACTION: approve, decline, resume, retry or resolve) and
// waits up to wait for the run to rest (0: the server's default).
func (c *Client) Decide(ctx context.Context, action store.Action, runID string, req api.DecisionRequest, wait time.Duration) (*Answer, error) {
	return c.advance(ctx, runPath(runID, string(action)), req, wait, newKey())
}

// Continue continues a run that stalled or that a stopped process left
// running (POST /v1/runs/{id}/continue).
func (c *Client) Continue(ctx context.Context, runID string, wait time.Duration) (*Answer, error) {
	return c.advance(ctx, runPath(runID, "continue"), struct{}{}, wait, "")
}

// Send adds a user message to a run's conversation (POST
// /v1/runs/{id}/send).
func (c *Client) Send(ctx context.Context, runID string, req api.SendRequest, wait time.Duration) (*Answer, error) {
	return c.advance(ctx, runPath(runID, "send"), req, wait, "")
}

// newKey is a fresh idempotency key: 128 random bits.
func newKey() string {
	return rand.Text()
}

// advance posts body to path, with idempotency key key when not "", and
// reads the run it answers with.
func (c *Client) advance(ctx context.Context, path string, body any, wait time.Duration, key string) (*Answer, error) {
	q := url.Values{}
	timeout := 30*time.Second + waitSlack // the server's default wait
	if wait > 0 {
		q.Set("wait", wait.String())
		timeout = wait + waitSlack
	}
	var d engine.RunDetail
	status, err := c.do(ctx, request{method: http.MethodPost, path: path, query: q, body: body, timeout: timeout, key: key}, &d)
	if err != nil {
		return nil, err
	}
	return &Answer{Run: &d, Done: status != http.StatusAccepted}, nil
}

// Run returns a run as show -o json prints it (GET /v1/runs/{id}); id may
// be any unique prefix.
func (c *Client) Run(ctx context.Context, id string) (*engine.RunDetail, error) {
	var d engine.RunDetail
	if _, err := c.do(ctx, request{method: http.MethodGet, path: runPath(id, "")}, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// TreeNode is a run of a tree as GET /v1/runs/{id}?tree=true answers it:
// the run with its children, nested.
type TreeNode struct {
	engine.TreeRun
	Children []TreeNode `json:"children"`
}

// Tree returns the tree of runs id belongs to, from its root, as show
// --tree prints it: one run after the other, children after their
// parent, each with its depth.
func (c *Client) Tree(ctx context.Context, id string) ([]engine.TreeRun, error) {
	var root TreeNode
	q := url.Values{"tree": {"true"}}
	if _, err := c.do(ctx, request{method: http.MethodGet, path: runPath(id, ""), query: q}, &root); err != nil {
		return nil, err
	}
	if root.RootID != "" && root.RootID != root.RunID {
		// A sub-agent's run: its tree is its root's.
		rootID := root.RootID
		root = TreeNode{}
		if _, err := c.do(ctx, request{method: http.MethodGet, path: runPath(rootID, ""), query: q}, &root); err != nil {
			return nil, err
		}
	}
	var out []engine.TreeRun
	var walk func(n TreeNode, depth int)
	walk = func(n TreeNode, depth int) {
		n.Depth = depth
		out = append(out, n.TreeRun)
		for _, ch := range n.Children {
			walk(ch, depth+1)
		}
	}
	walk(root, 0)
	return out, nil
}

// Filter selects the runs List returns, as the list command's flags.
type Filter struct {
	Status store.Status
	Agent  string
	Roots  bool // with Agent: only the runs users started
	Limit  int  // at most this many; 0: all
}

// pageSize is the most runs List asks for in one request.
const pageSize = 500

// List returns runs, newest first (GET /v1/runs), following the cursor
// from page to page until it has Limit runs or there are no more.
func (c *Client) List(ctx context.Context, f Filter) ([]*engine.RunView, error) {
	q := url.Values{}
	if f.Status != "" {
		q.Set("status", string(f.Status))
	}
	if f.Agent != "" {
		q.Set("agent", f.Agent)
	}
	if f.Roots {
		q.Set("roots", "true")
	}
	runs := []*engine.RunView{}
	for {
		n := pageSize
		if f.Limit > 0 {
			n = min(f.Limit-len(runs), pageSize)
		}
		q.Set("limit", strconv.Itoa(n))
		var page api.List[*engine.RunView]
		if _, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/runs", query: q}, &page); err != nil {
			return nil, err
		}
		runs = append(runs, page.Items...)
		if f.Limit > 0 && len(runs) >= f.Limit {
			return runs[:f.Limit], nil
		}
		if page.Next == "" || len(page.Items) == 0 {
			return runs, nil
		}
		q.Set("cursor", page.Next)
	}
}

// Approvals returns one page of the inbox (GET /v1/approvals): every call
// waiting for a human, and the cursor of the next page ("" for none).
func (c *Client) Approvals(ctx context.Context, limit int, cursor string) (*api.List[api.Approval], error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	var page api.List[api.Approval]
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/approvals", query: q}, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// Whoami returns the caller as the server authenticated it (GET
// /v1/whoami).
func (c *Client) Whoami(ctx context.Context) (*api.Whoami, error) {
	var w api.Whoami
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/whoami"}, &w); err != nil {
		return nil, err
	}
	return &w, nil
}

// ShortID returns the shortest prefix of run id id, at least
// engine.MinShortID characters, that names no other run on the server,
// as engine.ShortID does against a database.
func (c *Client) ShortID(ctx context.Context, id string) (string, error) {
	if len(id) <= engine.MinShortID {
		return id, nil
	}
	lo, hi := engine.MinShortID, len(id)
	for lo < hi {
		n := (lo + hi) / 2
		d, err := c.Run(ctx, id[:n])
		var e *Error
		switch {
		case errors.As(err, &e) && len(e.Ambiguous()) > 0:
			lo = n + 1
		case err != nil:
			return "", err
		case d.RunID != id:
			return id, nil
		default:
			hi = n
		}
	}
	return id[:lo], nil
}

// runPath is the path of a run, or of one of its actions.
func runPath(id, action string) string {
	p := "/v1/runs/" + url.PathEscape(id)
	if action != "" {
		p += "/" + action
	}
	return p
}

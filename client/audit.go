package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/engine/store"
)

// auditPage is how many decisions Audit asks for in one request.
const auditPage = 1000

// Audit returns the decisions f selects (GET /v1/audit), in the order
// they were made, following the cursor from page to page; f.Limit is
// ignored.
func (c *Client) Audit(ctx context.Context, f store.AuditFilter) ([]api.AuditEntry, error) {
	q := url.Values{"limit": {strconv.Itoa(auditPage)}}
	if !f.Since.IsZero() {
		q.Set("since", f.Since.UTC().Format(time.RFC3339Nano))
	}
	if !f.Until.IsZero() {
		q.Set("until", f.Until.UTC().Format(time.RFC3339Nano))
	}
	if f.Agent != "" {
		q.Set("agent", f.Agent)
	}
	if f.RootOnly {
		q.Set("rootOnly", "true")
	}
	out := []api.AuditEntry{}
	for {
		var page api.List[api.AuditEntry]
		if _, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/audit", query: q}, &page); err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if page.Next == "" || len(page.Items) == 0 || page.Next == q.Get("cursor") {
			return out, nil
		}
		q.Set("cursor", page.Next)
	}
}

// Status returns what agentctl status shows (GET /v1/status), the
// database named by its kind.
func (c *Client) Status(ctx context.Context) (*api.Status, error) {
	var s api.Status
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/status"}, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// Package http sends one HTTP request as a tool, only ever to the scheme
// and host written in the spec: placeholders may fill the path (each
// value path-escaped), query values (URL-encoded), headers and a JSON
// body, never where the request goes. Redirects to another host are
// refused.
package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	nethttp "net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/spec/tmpl"
	"github.com/agentctl/agentctl/toolkits"
	"github.com/agentctl/agentctl/toolkits/redact"
)

// Defaults for what a spec leaves out.
const (
	DefaultTimeout     = 30 * time.Second
	DefaultMaxResponse = 1 << 20
)

// Action sends one declared request.
type Action struct {
	spec        *spec.HTTP
	origin      *url.URL
	timeout     time.Duration
	maxResponse int64
	client      *nethttp.Client
}

// New returns the Action for an http declaration.
func New(h *spec.HTTP) (*Action, error) {
	origin, err := url.Parse(h.Origin)
	if err != nil {
		return nil, fmt.Errorf("http url: %w", err)
	}
	a := &Action{spec: h, origin: origin, timeout: h.Timeout, maxResponse: h.MaxResponse}
	if a.timeout == 0 {
		a.timeout = DefaultTimeout
	}
	if a.maxResponse == 0 {
		a.maxResponse = DefaultMaxResponse
	}
	a.client = &nethttp.Client{CheckRedirect: func(req *nethttp.Request, via []*nethttp.Request) error {
		if !a.sameOrigin(req.URL) {
			return fmt.Errorf("redirect to %s://%s refused: the tool may only reach %s", req.URL.Scheme, req.URL.Host, h.Origin)
		}
		if len(via) >= 5 {
			return errors.New("too many redirects")
		}
		return nil
	}}
	return a, nil
}

func (a *Action) sameOrigin(u *url.URL) bool {
	return u.Scheme == a.origin.Scheme && u.Host == a.origin.Host && u.User == nil
}

// Output is the result of a request: a JSON object in views, events and
// the database, and as compact JSON to the model. Headers holds the
// shownHeaders the response has (an empty object when none).
type Output struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    any               `json:"body"` // decoded when JSON
}

// shownHeaders are the response headers a result keeps.
var shownHeaders = []string{"Content-Type", "Location", "Retry-After"}

// Do implements toolkits.Action. A 4xx or 5xx response is a failed
// result the model sees; a network error is an error.
func (a *Action) Do(ctx context.Context, c toolkits.Call) (toolkits.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	req, err := a.request(ctx, c)
	if err != nil {
		return toolkits.Result{}, err
	}
	resp, err := a.client.Do(req)
	if err != nil {
		u := req.URL
		return toolkits.Result{}, fmt.Errorf("%s %s://%s%s: %w", a.spec.Method, u.Scheme, u.Host, u.Path, unwrapURLError(err))
	}
	defer resp.Body.Close()
	return a.result(resp, redact.New(slices.Collect(maps.Keys(c.Env)), c.Env))
}

// Preview implements toolkits.Previewer: the request as Do would send
// it, with the declared headers.
func (a *Action) Preview(c toolkits.Call) (toolkits.Preview, error) {
	req, err := a.request(context.Background(), c)
	if err != nil {
		return toolkits.Preview{}, err
	}
	p := toolkits.Preview{Method: req.Method, URL: req.URL.String()}
	for k := range a.spec.Headers {
		if p.Headers == nil {
			p.Headers = map[string]string{}
		}
		p.Headers[k] = req.Header.Get(k)
	}
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return toolkits.Preview{}, fmt.Errorf("body: %w", err)
		}
		b, err := io.ReadAll(body)
		if err != nil {
			return toolkits.Preview{}, fmt.Errorf("body: %w", err)
		}
		p.Body = string(b)
	}
	return p, nil
}

// request renders the declared request for a call: placeholders in the
// path are path-escaped, query values URL-encoded, and the URL must keep
// the declared origin.
func (a *Action) request(ctx context.Context, c toolkits.Call) (*nethttp.Request, error) {
	env := tmpl.Env(c.Vars())
	raw, err := a.spec.URL.RenderEscaped(env, escapeURL)
	if err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	if !a.sameOrigin(u) {
		return nil, fmt.Errorf("url %s://%s refused: the tool may only reach %s", u.Scheme, u.Host, a.spec.Origin)
	}
	q := u.Query()
	for _, k := range slices.Sorted(maps.Keys(a.spec.Query)) {
		v, err := a.spec.Query[k].Render(env)
		if err != nil {
			return nil, fmt.Errorf("query %s: %w", k, err)
		}
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	var body io.Reader
	if a.spec.Body != nil {
		v, err := a.spec.Body.Eval(env)
		if err != nil {
			return nil, fmt.Errorf("body: %w", err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("body: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := nethttp.NewRequestWithContext(ctx, a.spec.Method, u.String(), body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Idempotency-Key", c.IdempotencyKey())
	for _, k := range slices.Sorted(maps.Keys(a.spec.Headers)) {
		v, err := a.spec.Headers[k].Render(env)
		if err != nil {
			return nil, fmt.Errorf("header %s: %w", k, err)
		}
		req.Header.Set(k, v)
	}
	return req, nil
}

// result reads a response, up to maxResponse bytes, into the result the
// model sees: status, selected headers and the body, decoded when it is
// JSON. A 4xx or 5xx status is a failed result. The secrets are cut from
// the headers and the body, before the body is truncated to maxResponse,
// so a secret straddling the cut leaves nothing behind.
func (a *Action) result(resp *nethttp.Response, secrets *redact.Redactor) (toolkits.Result, error) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, a.maxResponse+int64(secrets.Slack())+1))
	if err != nil {
		return toolkits.Result{}, fmt.Errorf("reading the response: %w", err)
	}
	out := Output{Status: resp.StatusCode, Headers: map[string]string{}}
	for _, h := range shownHeaders {
		if v := resp.Header.Get(h); v != "" {
			out.Headers[h] = secrets.Cut(v)
		}
	}
	body, truncated := secrets.Prefix(string(data), int(a.maxResponse))
	var decoded any
	if !truncated && strings.Contains(resp.Header.Get("Content-Type"), "json") && json.Unmarshal([]byte(body), &decoded) == nil {
		out.Body = decoded
	} else {
		s := body
		if truncated {
			s += fmt.Sprintf("\n[... truncated at %d bytes]", a.maxResponse)
		}
		out.Body = s
	}
	return toolkits.ObjectResult(out, resp.StatusCode >= 400)
}

// escapeURL escapes a placeholder's value for where it stands in the URL:
// in the query as a query value (an & or = in it stays in the value), in
// the path as a path segment's text; a value that is . or .. would climb
// the path, and is refused.
func escapeURL(before, value string) (string, error) {
	if strings.ContainsAny(before, "?#") {
		return url.QueryEscape(value), nil
	}
	if strings.Trim(value, ".") == "" && value != "" {
		return "", fmt.Errorf("a path placeholder may not be %q", value)
	}
	return url.PathEscape(value), nil
}

// unwrapURLError drops url.Error's repetition of the method and URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// Kit builds the tool of an http declaration: the environment variables
// its URL, body, query and headers read are its secrets.
func Kit(t *spec.Tool) (toolkits.Kit, error) {
	h := t.HTTP
	a, err := New(h)
	if err != nil {
		return nil, fmt.Errorf("%s: tool %s: %w", t.Pos, t.Name, err)
	}
	vars := append(h.URL.EnvNames(), h.Body.EnvNames()...)
	for _, v := range h.Query {
		vars = append(vars, v.EnvNames()...)
	}
	for _, v := range h.Headers {
		vars = append(vars, v.EnvNames()...)
	}
	return &toolkits.Declared{Spec: t, Act: a, Summary: h.Method + " " + h.URL.Source(), Vars: vars}, nil
}

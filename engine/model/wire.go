package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// rewrite is an http.RoundTripper that fixes a provider request body
// before it is sent, where langchaingo's clients send what the spec did
// not ask for or what the API refuses. A body it cannot parse goes out as
// it is.
type rewrite struct {
	base http.RoundTripper
	path string // the request path suffix to rewrite, e.g. /chat/completions
	// temperature keeps the temperature field: langchaingo always sends
	// one (0 when unset), which overrides the provider's default and
	// which reasoning models refuse.
	temperature bool
	// mergeRoles merges consecutive messages of one role into one whose
	// content is all their content blocks (Anthropic).
	mergeRoles bool
}

func (t *rewrite) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, t.path) || req.Body == nil {
		return t.base.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	if fixed, err := t.fix(body); err == nil {
		body = fixed
	}
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	r.ContentLength = int64(len(body))
	return t.base.RoundTrip(r)
}

func (t *rewrite) fix(body []byte) ([]byte, error) {
	var req map[string]json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	if !t.temperature {
		delete(req, "temperature")
	}
	if t.mergeRoles {
		msgs, err := mergeRoles(req["messages"])
		if err != nil {
			return nil, err
		}
		req["messages"] = msgs
	}
	return json.Marshal(req)
}

// mergeRoles merges consecutive messages of one role, each content a
// string or an array of blocks, into one with all the blocks.
func mergeRoles(raw json.RawMessage) (json.RawMessage, error) {
	var in []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, err
	}
	type message struct {
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
	}
	var out []message
	for _, m := range in {
		var blocks []json.RawMessage
		if err := json.Unmarshal(m.Content, &blocks); err != nil {
			var s string
			if err := json.Unmarshal(m.Content, &s); err != nil {
				return nil, fmt.Errorf("message content: %w", err)
			}
			b, _ := json.Marshal(map[string]string{"type": "text", "text": s})
			blocks = []json.RawMessage{b}
		}
		if n := len(out); n > 0 && out[n-1].Role == m.Role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			continue
		}
		out = append(out, message{Role: m.Role, Content: blocks})
	}
	return json.Marshal(out)
}

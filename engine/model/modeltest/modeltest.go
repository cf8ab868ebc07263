// Package modeltest serves fake model provider APIs on loopback, speaking
// the wire protocols agentctl's providers use (OpenAI chat completions and
// Anthropic messages, each plain or streamed as server-sent events), and
// keeps every request it gets, so tests can assert on exact bodies.
//
// The fake model calls the first tool offered, with {"service":"nginx"}
// (and, with Options.Parallel, a second call with {"service":"redis"} in
// the same message); once it has the results it answers "done: " and the
// results joined by "; ". Offered no tools, it answers "done: " and the
// user's message.
package modeltest

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
)

// Options shape a fake server's behaviour.
type Options struct {
	// Parallel makes the tool-calling reply hold two calls, after a line
	// of text.
	Parallel bool
	// Fail answers the first len(Fail) requests with these status codes
	// (429 carries Retry-After: 0) before answering normally.
	Fail []int
	// Log, when set, is a file each request body is appended to, one
	// compact JSON line each.
	Log string
	// Echo makes the model echo the API key it was sent (OpenAI only),
	// as a model that was shown its key might: its text holds the key
	// as it is, in base64 (standard, URL-safe, unpadded), in hex (lower
	// and upper case) and URL-escaped; its tool call has the key in its
	// id and its arguments' service; its reasoning_content is the key.
	// Streamed, each word of the text comes in two halves, so every form
	// of the key straddles two chunks.
	Echo bool
}

// Request is a request the server got.
type Request struct {
	Header http.Header
	Body   []byte
}

// Server is a fake provider API on loopback.
type Server struct {
	// URL is the base URL to give a model as baseURL.
	URL string

	srv  *httptest.Server
	opts Options

	mu    sync.Mutex
	reqs  []Request
	fails []int
}

// OpenAI starts a fake OpenAI chat completions API.
func OpenAI(o Options) *Server { return start(o, openAIReply) }

// Anthropic starts a fake Anthropic messages API.
func Anthropic(o Options) *Server { return start(o, anthropicReply) }

func start(o Options, reply func(w http.ResponseWriter, body []byte, key string, o Options) error) *Server {
	s := &Server{opts: o, fails: append([]int(nil), o.Fail...)}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.reqs = append(s.reqs, Request{Header: r.Header.Clone(), Body: body})
		var fail int
		if len(s.fails) > 0 {
			fail, s.fails = s.fails[0], s.fails[1:]
		}
		if o.Log != "" {
			var b bytes.Buffer
			if json.Compact(&b, body) != nil {
				b.Write(body)
			}
			if f, err := os.OpenFile(o.Log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
				fmt.Fprintf(f, "%s\n", b.Bytes())
				f.Close()
			}
		}
		s.mu.Unlock()
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if key == "" {
			key = r.Header.Get("X-Api-Key")
		}
		if fail != 0 {
			if fail == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "0")
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(fail)
			msg := fmt.Sprintf("fake status %d", fail)
			if fail == http.StatusUnauthorized {
				// As OpenAI does: the key echoed back, which agentctl must
				// never store or show.
				msg = "Incorrect API key provided: " + key
			}
			m, _ := json.Marshal(msg)
			fmt.Fprintf(w, `{"type":"error","error":{"type":"fake_error","message":%s}}`, m)
			return
		}
		if err := reply(w, body, key, o); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	}))
	s.URL = s.srv.URL
	return s
}

// Requests returns the requests received so far, failed ones included.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// call is a tool call the fake model makes.
type call struct{ id, name, args string }

// decide is the fake model: the text and calls of its reply.
func decide(tool string, results []string, user string, o Options, ids [2]string) (string, []call) {
	switch {
	case len(results) > 0:
		return "done: " + strings.Join(results, "; "), nil
	case tool == "":
		return "done: " + user, nil
	case o.Parallel:
		return "Restarting both.", []call{{ids[0], tool, `{"service":"nginx"}`}, {ids[1], tool, `{"service":"redis"}`}}
	}
	return "", []call{{ids[0], tool, `{"service":"nginx"}`}}
}

// chunks splits text as a streaming server would, a word at a time;
// with Options.Echo, each word in two halves.
func chunks(s string, o Options) []string {
	var out []string
	for _, w := range strings.SplitAfter(s, " ") {
		switch {
		case w == "":
		case o.Echo && len(w) > 1:
			h := halves(w)
			out = append(out, h[0], h[1])
		default:
			out = append(out, w)
		}
	}
	return out
}

// echo is the text in which a model echoes key (Options.Echo).
func echo(key string) string {
	b := []byte(key)
	return fmt.Sprintf("plain=%s std=%s url=%s raw=%s hex=%s HEX=%s pct=%s", key,
		base64.StdEncoding.EncodeToString(b), base64.URLEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
		hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b)), url.QueryEscape(key))
}

// halves splits a tool call's arguments in two deltas.
func halves(s string) [2]string { return [2]string{s[:len(s)/2], s[len(s)/2:]} }

// sse writes one server-sent event.
func sse(w io.Writer, event string, data any) {
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	b, _ := json.Marshal(data)
	fmt.Fprintf(w, "data: %s\n\n", b)
}

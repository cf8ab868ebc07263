package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/server"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentctl/agentctl/toolkits/mcp/demoserver"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"agentctl": func() { os.Exit(Main()) },
		// mcp-demo-server is the demo MCP server (stdio).
		"mcp-demo-server": func() {
			if err := demoserver.Serve(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		},
		// appendline FILE TEXT appends a line to FILE: exec tools in
		// scenarios use it to leave a countable trace of each execution.
		// It prints "appended TEXT".
		"appendline": func() {
			if len(os.Args) != 3 {
				fmt.Fprintln(os.Stderr, "usage: appendline FILE TEXT")
				os.Exit(2)
			}
			f, err := os.OpenFile(os.Args[1], os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err == nil {
				_, err = fmt.Fprintln(f, os.Args[2])
				err = errors.Join(err, f.Close())
			}
			if err == nil {
				fmt.Printf("appended %s\n", os.Args[2])
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		},
	})
}

// TestScripts runs the scenarios in testdata/scripts. Each gets a fresh
// database ($AGENTCTL_DB in its work directory) and $EXAMPLES, the
// examples/agents directory. Besides the standard commands, scripts have:
//
//	exits N PROG [ARGS...]  run PROG like exec and require exit code N
//	capture NAME REGEXP     set $NAME to REGEXP's first group in the last stdout
//	jsonlines N             the last stdout is N lines, each a JSON object
//	                        with a string "type" and "runId"
//	mcpserver NAME          serve the demo MCP server over streamable HTTP on
//	                        loopback until the script ends; $NAME is its URL
//	openaiserver NAME [N]   serve a fake OpenAI chat API on loopback ($NAME is
//	                        its base URL): it calls the first tool offered,
//	                        then answers "done: " and the tool's result; the
//	                        first N requests get 429 with Retry-After: 0
//	httpserver NAME         serve HTTP on loopback until the script ends, set
//	                        $NAME to its base URL, and log each request
//	                        (method, path, query, headers, body) to
//	                        $WORK/NAME.log; see testServer for its routes
func TestScripts(t *testing.T) {
	examples, err := filepath.Abs("../../examples/agents")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "../../testdata/scripts",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("AGENTCTL_DB", filepath.Join(env.WorkDir, "agentctl.db"))
			env.Setenv("EXAMPLES", examples)
			return nil
		},
		Cmds: testCmds(),
	})
}

// testCmds are scriptCmds plus the servers the project's own scenarios
// start.
func testCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	cmds := scriptCmds()
	cmds["httpserver"] = httpserver
	cmds["mcpserver"] = mcpserver
	cmds["openaiserver"] = openaiserver
	return cmds
}

// httpserver starts testServer for a script.
func httpserver(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: httpserver NAME")
	}
	name := args[0]
	logPath := ts.MkAbs(name + ".log")
	srv := httptest.NewServer(testServer(logPath))
	ts.Defer(srv.Close)
	ts.Setenv(name, srv.URL)
}

// testServer answers: /items/ID with JSON naming the item, /tickets (POST)
// with 201 and the JSON it got, /missing with 404, /redirect with a
// redirect to another host, anything else with plain text. It logs every
// request to logPath, one line each.
func testServer(logPath string) http.Handler {
	var mu sync.Mutex
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		f, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintf(f, "%s %s query=%s auth=%q idem=%q body=%s\n", r.Method, r.URL.EscapedPath(), r.URL.RawQuery,
				r.Header.Get("Authorization"), r.Header.Get("Idempotency-Key"), body)
			f.Close()
		}
		mu.Unlock()
		switch {
		case strings.HasPrefix(r.URL.Path, "/items/"):
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"id": strings.TrimPrefix(r.URL.Path, "/items/"), "state": "open"})
		case r.URL.Path == "/tickets" && r.Method == http.MethodPost:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			w.Write(body)
		case r.URL.Path == "/missing":
			http.Error(w, "no such thing", http.StatusNotFound)
		case r.URL.Path == "/redirect":
			http.Redirect(w, r, "http://evil.invalid/steal", http.StatusFound)
		default:
			fmt.Fprintf(w, "hello from %s", r.URL.Path)
		}
	})
}

// mcpserver serves the demo MCP server over streamable HTTP for a script.
func mcpserver(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: mcpserver NAME")
	}
	srv := httptest.NewServer(server.NewStreamableHTTPServer(demoserver.New()))
	ts.Defer(srv.Close)
	ts.Setenv(args[0], srv.URL+"/mcp")
}

// openaiserver serves a fake OpenAI chat completions API for a script.
func openaiserver(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: openaiserver NAME [FAILS]")
	}
	var fails atomic.Int64
	if len(args) == 2 {
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		fails.Store(int64(n))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fails.Add(-1) >= 0 {
			w.Header().Set("Retry-After", "0")
			http.Error(w, `{"error":{"message":"slow down","type":"rate_limit"}}`, http.StatusTooManyRequests)
			return
		}
		var req struct {
			Messages []map[string]any `json:"messages"`
			Tools    []struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tools"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		last := req.Messages[len(req.Messages)-1]
		msg := map[string]any{"role": "assistant"}
		if last["role"] == "tool" || len(req.Tools) == 0 {
			msg["content"] = fmt.Sprint("done: ", last["content"])
		} else {
			msg["content"] = nil
			msg["tool_calls"] = []any{map[string]any{"id": "call_abc", "type": "function",
				"function": map[string]any{"name": req.Tools[0].Function.Name, "arguments": `{"service":"nginx"}`}}}
		}
		json.NewEncoder(w).Encode(map[string]any{"id": "x", "object": "chat.completion", "created": 1, "model": "fake",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}})
	}))
	ts.Defer(srv.Close)
	ts.Setenv(args[0], srv.URL)
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/api/apitest"
	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/server"
)

// apireqMain is the apireq program of the scenarios: one HTTP request
// to agentctl serve, its body on stdout.
//
//	apireq [-status N] [-socket PATH] [-token TOKEN] [-H 'Name: value']... [-events N] [-include] METHOD URL [BODY|@FILE]
//
// URL is the server's base URL and a path (with -socket, a path alone).
// With -events, it reads an event stream's first N events, then hangs
// up (GET /v1/events never ends by itself). @FILE sends FILE's bytes.
// It exits 0 when the status is N (default: any 2xx), else 1, saying
// the status on stderr; 3 when the response is not what the OpenAPI
// document (api.OpenAPI) says the route answers, whatever its status
// (for the routes it documents: the inbox's pages are not the API).
// With -include the status line and headers come first, as curl -i.
func apireqMain() int {
	fs := flag.NewFlagSet("apireq", flag.ContinueOnError)
	want := fs.Int("status", 0, "")
	socket := fs.String("socket", "", "")
	tok := fs.String("token", "", "")
	events := fs.Int("events", 0, "")
	include := fs.Bool("include", false, "")
	var headers []string
	fs.Func("H", "", func(s string) error { headers = append(headers, s); return nil })
	if err := fs.Parse(os.Args[1:]); err != nil || fs.NArg() < 2 || fs.NArg() > 3 {
		fmt.Fprintln(os.Stderr, "usage: apireq [-status N] [-socket PATH] [-token TOKEN] [-H 'Name: value']... [-events N] METHOD URL [BODY]")
		return 2
	}
	url := fs.Arg(1)
	// Redirects are answers to check, not to follow.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if *socket != "" {
		url = "http://agentctl" + url
		client.Transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", *socket)
		}}
	}
	var body io.Reader
	if fs.NArg() == 3 {
		body = strings.NewReader(fs.Arg(2))
		if name, ok := strings.CutPrefix(fs.Arg(2), "@"); ok {
			data, err := os.ReadFile(name)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
			body = bytes.NewReader(data)
		}
	}
	req, err := http.NewRequest(fs.Arg(0), url, body)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if *tok != "" {
		req.Header.Set("Authorization", "Bearer "+*tok)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := client.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer resp.Body.Close()
	got, err := readBody(resp.Body, *events)
	if *include {
		fmt.Printf("%s %s\n", resp.Proto, resp.Status)
		for _, k := range slices.Sorted(maps.Keys(resp.Header)) {
			for _, v := range resp.Header[k] {
				fmt.Printf("%s: %s\n", k, v)
			}
		}
		fmt.Println()
	}
	os.Stdout.Write(got)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "status %d\n", resp.StatusCode)
	// Every response a scenario records is held against the OpenAPI
	// document the server serves.
	c, err := apitest.Load(api.OpenAPI())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if !documented(req.URL.Path) {
		// An inbox page: not the API.
	} else if problems := c.Problems(req, resp, got); len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "apireq: the response is not what the OpenAPI document says:\n%s\n", strings.Join(problems, "\n"))
		return 3
	}
	if *want == 0 && resp.StatusCode/100 == 2 || resp.StatusCode == *want {
		return 0
	}
	return 1
}

// documented reports whether the OpenAPI document covers a path: the
// API under /v1 and the health and metrics routes.
func documented(path string) bool {
	return strings.HasPrefix(path, "/v1/") || path == "/healthz" || path == "/readyz" || path == "/metrics"
}

// readBody reads a whole body or, with events > 0, an event stream's
// first events (each ends at a blank line after its data).
func readBody(r io.Reader, events int) ([]byte, error) {
	if events <= 0 {
		return io.ReadAll(r)
	}
	var out bytes.Buffer
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	data := false
	for events > 0 && sc.Scan() {
		line := sc.Text()
		out.WriteString(line + "\n")
		switch {
		case strings.HasPrefix(line, "data:"):
			data = true
		case line == "" && data:
			data, events = false, events-1
		}
	}
	if events > 0 {
		return out.Bytes(), fmt.Errorf("the stream ended %d events short: %v", events, sc.Err())
	}
	return out.Bytes(), nil
}

// waitready waits for a server's ready file (serve --ready-file) and
// sets $NAME to the base URL written there.
func waitready(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitready FILE NAME")
	}
	path := ts.MkAbs(args[0])
	deadline := time.Now().Add(60 * time.Second)
	for {
		data, err := os.ReadFile(path)
		if err == nil && strings.HasSuffix(string(data), "\n") {
			ts.Setenv(args[1], strings.TrimSpace(string(data)))
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitready: %s did not appear in 60s", args[0])
		}
		time.Sleep(10 * time.Millisecond) // polls a condition: the file the server writes once it listens
	}
}

// waitfor waits until FILE holds a line that matches REGEXP (a log a
// background program appends to).
func waitfor(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitfor FILE REGEXP")
	}
	re, err := regexp.Compile("(?m)" + args[1])
	ts.Check(err)
	path := ts.MkAbs(args[0])
	deadline := time.Now().Add(60 * time.Second)
	for {
		if data, err := os.ReadFile(path); err == nil && re.Match(data) {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitfor: no line of %s matched %q in 60s", args[0], args[1])
		}
		time.Sleep(10 * time.Millisecond) // polls a condition: a line another process appends
	}
}

// syncBuffer is a log the reload goroutine writes while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// SIGHUP reloads the specs; a broken reload keeps the old ones and logs
// each error at its file:line:col.
func TestWatchReload(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "spec.yaml")
	write := func(text string) {
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const spec = "version: 1\nmodels: {m: {provider: scripted, turns: [{text: hi}]}}\nagents: {%s: {model: m}}\n"
	write(fmt.Sprintf(spec, "one"))
	e := engine.New(nil, engine.Config{})
	specs := server.NewSpecs([]string{file}, 0, e.Compile)
	var logBuf syncBuffer
	log := slog.New(slog.NewTextHandler(&logBuf, nil))
	if err := specs.Load(log); err != nil {
		t.Fatal(err)
	}
	a := &app{}
	defer a.watchReload(specs, log)()
	until := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not after 10s; log:\n%s", what, logBuf.String())
			}
		}
	}
	write(fmt.Sprintf(spec, "two"))
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	until("reloaded", func() bool { return slices.Contains(specs.Graph().Agents(), "two") })
	write("version: 1\nagents:\n  three: {model: nope}\n")
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	until("a broken reload logged", func() bool { return strings.Contains(logBuf.String(), "specs not reloaded") })
	if !slices.Contains(specs.Graph().Agents(), "two") {
		t.Fatalf("the old specs were dropped: %v", specs.Graph().Agents())
	}
	if !strings.Contains(logBuf.String(), file+":3:") {
		t.Fatalf("no file:line:col in the log:\n%s", logBuf.String())
	}
}

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
//	apireq [-status N] [-socket PATH] [-token TOKEN] [-H 'Name: value']... [-events N] [-include] [-until REGEXP] METHOD URL [BODY|@FILE]
//
// URL is the server's base URL and a path (with -socket, a path alone).
// With -events, it reads an event stream's first N events, then hangs
// up (GET /v1/events never ends by itself). @FILE sends FILE's bytes.
// With -until (a GET), it asks again every 10ms, for up to a minute,
// until the body matches REGEXP: what a run that goes on in the
// background reaches. It exits 0 when the status is N (default: any
// 2xx), else 1, saying the status on stderr; 3 when the response is not
// what the OpenAPI document (api.OpenAPI) says the route answers,
// whatever its status (for the routes it documents: the inbox's pages
// are not the API). With -include the status line and headers come
// first, as curl -i.
func apireqMain() int {
	return apireq(os.Args[1:], apireqEnv{stdout: os.Stdout, stderr: os.Stderr, abs: func(p string) string { return p },
		checker: func() (*apitest.Checker, error) { return apitest.Load(api.OpenAPI()) }})
}

// apireqCmd is the script command api: apireq in the test process,
// without a process or an OpenAPI document loaded per request (the
// program remains, for as USER apireq and a request in the background).
// The exit codes of the program that mean a defect in the scenario or
// the server (2: usage, 3: not what the OpenAPI document says) fail the
// script whatever its !.
func apireqCmd(ts *testscript.TestScript, neg bool, args []string) {
	code := apireq(args, apireqEnv{stdout: ts.Stdout(), stderr: ts.Stderr(), abs: ts.MkAbs, checker: openAPIChecker})
	switch {
	case code == 2 || code == 3:
		ts.Fatalf("api: exit %d", code)
	case neg && code == 0:
		ts.Fatalf("api: unexpected success")
	case !neg && code != 0:
		ts.Fatalf("api: exit %d", code)
	}
}

// openAPIChecker is the document's checker, loaded once for all the
// scenarios (a Checker is safe for concurrent use).
var openAPIChecker = sync.OnceValues(func() (*apitest.Checker, error) { return apitest.Load(api.OpenAPI()) })

// apireqEnv is where apireq writes, how it makes a path absolute, and
// where it gets the OpenAPI checker.
type apireqEnv struct {
	stdout, stderr io.Writer
	abs            func(string) string
	checker        func() (*apitest.Checker, error)
}

// apireqArgs are apireq's flags and arguments.
type apireqArgs struct {
	want, events      int
	socket, tok, body string
	include, hasBody  bool
	until             *regexp.Regexp
	headers           []string
	method, url       string
}

func apireq(args []string, env apireqEnv) int {
	a, ok := parseApireq(args, env.stderr)
	if !ok {
		return 2
	}
	// Redirects are answers to check, not to follow; a connection is not
	// kept for another scenario's request.
	tr := &http.Transport{DisableKeepAlives: true}
	client := &http.Client{Transport: tr, Timeout: time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	url := a.url
	if a.socket != "" {
		url = "http://agentctl" + url
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", env.abs(a.socket))
		}
	}
	var body []byte
	if name, ok := strings.CutPrefix(a.body, "@"); ok {
		data, err := os.ReadFile(env.abs(name))
		if err != nil {
			fmt.Fprintln(env.stderr, err)
			return 2
		}
		body = data
	} else if a.hasBody {
		body = []byte(a.body)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		req, err := a.request(url, body)
		if err != nil {
			fmt.Fprintln(env.stderr, err)
			return 2
		}
		resp, err := client.Do(req)
		if err != nil {
			fmt.Fprintln(env.stderr, err)
			return 1
		}
		got, err := readBody(resp.Body, a.events)
		resp.Body.Close()
		if err == nil && a.until != nil && !a.until.Match(got) {
			if time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond) // polls a condition: a run going on in the server
				continue
			}
			err = fmt.Errorf("apireq: no match for %q in a minute", a.until)
		}
		return apiresp(req, resp, got, err, a, env)
	}
}

// parseApireq reads apireq's command line, saying what is wrong on stderr.
func parseApireq(args []string, stderr io.Writer) (*apireqArgs, bool) {
	var a apireqArgs
	fs := flag.NewFlagSet("apireq", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&a.want, "status", 0, "")
	fs.StringVar(&a.socket, "socket", "", "")
	fs.StringVar(&a.tok, "token", "", "")
	fs.IntVar(&a.events, "events", 0, "")
	fs.BoolVar(&a.include, "include", false, "")
	until := fs.String("until", "", "")
	fs.Func("H", "", func(s string) error { a.headers = append(a.headers, s); return nil })
	if err := fs.Parse(args); err != nil || fs.NArg() < 2 || fs.NArg() > 3 {
		fmt.Fprintln(stderr, "usage: apireq [-status N] [-socket PATH] [-token TOKEN] [-H 'Name: value']... [-events N] [-include] [-until REGEXP] METHOD URL [BODY]")
		return nil, false
	}
	a.method, a.url, a.body, a.hasBody = fs.Arg(0), fs.Arg(1), fs.Arg(2), fs.NArg() == 3
	if *until != "" {
		re, err := regexp.Compile(*until)
		if err != nil || a.method != http.MethodGet {
			fmt.Fprintf(stderr, "apireq: -until takes a regular expression, with GET (%v)\n", err)
			return nil, false
		}
		a.until = re
	}
	return &a, true
}

// request is the request apireq sends.
func (a *apireqArgs) request(url string, body []byte) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(a.method, url, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.tok != "" {
		req.Header.Set("Authorization", "Bearer "+a.tok)
	}
	given := map[string]bool{}
	for _, h := range a.headers {
		// As curl takes them: -H replaces a header apireq would send, a
		// header given twice is sent twice, and "Name;" sends Name with
		// an empty value.
		k, v, _ := strings.Cut(h, ":")
		if name, ok := strings.CutSuffix(h, ";"); ok && !strings.Contains(name, ":") {
			k, v = name, ""
		}
		k = http.CanonicalHeaderKey(strings.TrimSpace(k))
		if !given[k] {
			req.Header.Del(k)
			given[k] = true
		}
		req.Header[k] = append(req.Header[k], strings.TrimSpace(v))
	}
	return req, nil
}

// apiresp prints a response apireq got, and checks it.
func apiresp(req *http.Request, resp *http.Response, got []byte, readErr error, a *apireqArgs, env apireqEnv) int {
	stdout, stderr := env.stdout, env.stderr
	if a.include {
		fmt.Fprintf(stdout, "%s %s\n", resp.Proto, resp.Status)
		for _, k := range slices.Sorted(maps.Keys(resp.Header)) {
			for _, v := range resp.Header[k] {
				fmt.Fprintf(stdout, "%s: %s\n", k, v)
			}
		}
		fmt.Fprintln(stdout)
	}
	stdout.Write(got)
	if readErr != nil {
		fmt.Fprintln(stderr, readErr)
		return 1
	}
	fmt.Fprintf(stderr, "status %d\n", resp.StatusCode)
	// Every response a scenario records is held against the OpenAPI
	// document the server serves.
	c, err := env.checker()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if !documented(req.URL.Path) {
		// An inbox page: not the API.
	} else if problems := c.Problems(req, resp, got); len(problems) > 0 {
		fmt.Fprintf(stderr, "apireq: the response is not what the OpenAPI document says:\n%s\n", strings.Join(problems, "\n"))
		return 3
	}
	if a.want == 0 && resp.StatusCode/100 == 2 || resp.StatusCode == a.want {
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

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/notify"
)

// receiverMain is the webhook-receiver program of the scenarios: a
// Standard Webhooks receiver that logs every request it gets.
//
//	webhook-receiver [-secret whsec_...] [-fail N] [-status CODE] [-body FILE] [-redirect URL] [-count K] -addr FILE -log FILE
//
// It listens on 127.0.0.1, a free port, and once listening writes
// http://127.0.0.1:PORT to the -addr file (a temporary file renamed, so
// the file is whole once it exists). With -secret, each request is
// checked with notify.Verify: a bad one is answered 401. The first N
// requests (-fail) are answered -status (default 503), with the content
// of -body's file when given, the others 200 "ok"; with -redirect, every
// request is answered 307 to URL. Each request is appended to the -log file, before it is
// answered, as one JSON line, and printed on stdout:
//
//	{"n":1,"id":"<webhook-id>","timestamp":<webhook-timestamp or null>,"valid":true|false|null,"status":200,"body":{...}}
//
// (valid is null without -secret; body is the request's JSON, or a
// string when it is not JSON). After K 2xx answers (-count; 0: never) it
// exits 0 once the answer is written; it also exits 0 on SIGTERM or
// SIGINT. It exits 2 on bad usage.
func receiverMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return receive(ctx, os.Args[1:], os.Stdout, os.Stderr)
}

// webhookReceiver answers and logs the requests of receiverMain.
type webhookReceiver struct {
	key          []byte
	fail, status int
	count        int
	body         []byte // of an answer that is not 2xx
	redirect     string
	log, stdout  io.Writer

	mu   sync.Mutex
	n    int // requests
	ok   int // 2xx answers
	done chan struct{}
}

func receive(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("webhook-receiver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rc := &webhookReceiver{stdout: stdout, done: make(chan struct{})}
	secret := fs.String("secret", "", "")
	fs.IntVar(&rc.fail, "fail", 0, "")
	fs.IntVar(&rc.status, "status", http.StatusServiceUnavailable, "")
	fs.IntVar(&rc.count, "count", 0, "")
	addrFile, logFile := fs.String("addr", "", ""), fs.String("log", "", "")
	bodyFile := fs.String("body", "", "")
	fs.StringVar(&rc.redirect, "redirect", "", "")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 || *addrFile == "" || *logFile == "" || rc.status < 100 || rc.status > 599 {
		fmt.Fprintln(stderr, "usage: webhook-receiver [-secret whsec_...] [-fail N] [-status CODE] [-body FILE] [-redirect URL] [-count K] -addr FILE -log FILE")
		return 2
	}
	if *bodyFile != "" {
		var err error
		if rc.body, err = os.ReadFile(*bodyFile); err != nil {
			fmt.Fprintln(stderr, "webhook-receiver: -body:", err)
			return 2
		}
	}
	if *secret != "" {
		var err error
		if rc.key, err = notify.ParseSecret(*secret); err != nil {
			fmt.Fprintln(stderr, "webhook-receiver: -secret:", err)
			return 2
		}
	}
	logf, err := os.OpenFile(*logFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(stderr, "webhook-receiver:", err)
		return 1
	}
	defer logf.Close()
	rc.log = logf
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(stderr, "webhook-receiver:", err)
		return 1
	}
	srv := &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	tmp := *addrFile + ".tmp"
	if err := os.WriteFile(tmp, []byte("http://"+ln.Addr().String()+"\n"), 0o644); err != nil || os.Rename(tmp, *addrFile) != nil {
		fmt.Fprintln(stderr, "webhook-receiver: cannot write", *addrFile)
		srv.Close()
		return 1
	}
	select {
	case <-ctx.Done():
	case <-rc.done:
	case err := <-served:
		fmt.Fprintln(stderr, "webhook-receiver:", err)
		return 1
	}
	// Shutdown returns once the answers being written are written.
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return 0
}

func (rc *webhookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	rc.mu.Lock()
	rc.n++
	entry := struct {
		N         int             `json:"n"`
		ID        string          `json:"id"`
		Timestamp *int64          `json:"timestamp"`
		Valid     *bool           `json:"valid"`
		Status    int             `json:"status"`
		Body      json.RawMessage `json:"body"`
	}{N: rc.n, ID: r.Header.Get(notify.HeaderID), Status: http.StatusOK, Body: jsonOrString(body)}
	if ts, err := strconv.ParseInt(r.Header.Get(notify.HeaderTimestamp), 10, 64); err == nil {
		entry.Timestamp = &ts
	}
	if rc.key != nil {
		valid := notify.Verify(rc.key, r.Header, body, time.Now(), 0) == nil
		entry.Valid = &valid
		if !valid {
			entry.Status = http.StatusUnauthorized
		}
	}
	if entry.Status == http.StatusOK && rc.n <= rc.fail {
		entry.Status = rc.status
	}
	if rc.redirect != "" {
		entry.Status = http.StatusTemporaryRedirect
		w.Header().Set("Location", rc.redirect)
	}
	line, _ := json.Marshal(entry)
	line = append(line, '\n')
	_, _ = rc.log.Write(line)
	_, _ = rc.stdout.Write(line)
	last := false
	if entry.Status >= 200 && entry.Status <= 299 {
		rc.ok++
		last = rc.count > 0 && rc.ok == rc.count
	}
	rc.mu.Unlock()
	w.WriteHeader(entry.Status)
	if entry.Status == http.StatusOK {
		_, _ = io.WriteString(w, "ok")
	} else {
		_, _ = w.Write(rc.body)
	}
	if last {
		close(rc.done)
	}
}

// jsonOrString returns b compacted when it is JSON, else b as a JSON
// string.
func jsonOrString(b []byte) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, b) == nil {
		return buf.Bytes()
	}
	s, _ := json.Marshal(string(b))
	return s
}

func TestReceiver(t *testing.T) {
	dir := t.TempDir()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	addr, logPath := filepath.Join(dir, "addr"), filepath.Join(dir, "log")
	var stdout, stderr bytes.Buffer
	exited := make(chan int, 1)
	go func() {
		exited <- receive(context.Background(), []string{"-secret", secret, "-fail", "1", "-status", "500", "-count", "1", "-addr", addr, "-log", logPath}, &stdout, &stderr)
	}()
	var url string
	for deadline := time.Now().Add(10 * time.Second); url == ""; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(addr); err == nil {
			url = strings.TrimSpace(string(b))
		} else if time.Now().After(deadline) {
			t.Fatalf("no address: %s", stderr.String())
		}
	}
	key, _ := notify.ParseSecret(secret)
	m := &notify.Message{ID: "ntf_1", Type: notify.Completed, Run: notify.Run{ID: "r1"}, Output: "<done>"}
	ctx := context.Background()
	if err := (notify.Webhook{URL: url, Key: key, AllowPrivate: true}).Send(ctx, m, time.Now()); err == nil || errors.Is(err, notify.ErrPermanent) || !strings.Contains(err.Error(), "500") {
		t.Fatalf("first attempt: %v", err)
	}
	if err := (notify.Webhook{URL: url, Key: make([]byte, 32), AllowPrivate: true}).Send(ctx, m, time.Now()); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("badly signed attempt: %v", err)
	}
	if err := (notify.Webhook{URL: url, Key: key, AllowPrivate: true}).Send(ctx, m, time.Now()); err != nil {
		t.Fatalf("third attempt: %v", err)
	}
	select {
	case code := <-exited:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the receiver did not exit after -count answers")
	}
	log, _ := os.ReadFile(logPath)
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	if len(lines) != 3 || stdout.String() != string(log) {
		t.Fatalf("log:\n%s\nstdout:\n%s", log, stdout.String())
	}
	for i, want := range []string{`"valid":true,"status":500,`, `"valid":false,"status":401,`, `"valid":true,"status":200,`} {
		if !strings.HasPrefix(lines[i], fmt.Sprintf(`{"n":%d,"id":"ntf_1","timestamp":`, i+1)) || !strings.Contains(lines[i], want) ||
			!strings.Contains(lines[i], `"body":{"type":"run.completed",`) {
			t.Errorf("line %d = %s, want %s", i+1, lines[i], want)
		}
	}
}

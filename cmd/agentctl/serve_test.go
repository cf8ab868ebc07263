package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// apireqMain is the apireq program of the scenarios: one HTTP request
// to agentctl serve, its body on stdout.
//
//	apireq [-status N] [-socket PATH] [-token TOKEN] [-H 'Name: value']... METHOD URL [BODY]
//
// URL is the server's base URL and a path (with -socket, a path alone).
// It exits 0 when the status is N (default: any 2xx), else 1, saying
// the status on stderr.
func apireqMain() int {
	fs := flag.NewFlagSet("apireq", flag.ContinueOnError)
	want := fs.Int("status", 0, "")
	socket := fs.String("socket", "", "")
	tok := fs.String("token", "", "")
	var headers []string
	fs.Func("H", "", func(s string) error { headers = append(headers, s); return nil })
	if err := fs.Parse(os.Args[1:]); err != nil || fs.NArg() < 2 || fs.NArg() > 3 {
		fmt.Fprintln(os.Stderr, "usage: apireq [-status N] [-socket PATH] [-token TOKEN] [-H 'Name: value']... METHOD URL [BODY]")
		return 2
	}
	url := fs.Arg(1)
	client := http.DefaultClient
	if *socket != "" {
		url = "http://agentctl" + url
		client = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", *socket)
		}}}
	}
	var body io.Reader
	if fs.NArg() == 3 {
		body = strings.NewReader(fs.Arg(2))
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
	io.Copy(os.Stdout, resp.Body)
	fmt.Fprintf(os.Stderr, "status %d\n", resp.StatusCode)
	if *want == 0 && resp.StatusCode/100 == 2 || resp.StatusCode == *want {
		return 0
	}
	return 1
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

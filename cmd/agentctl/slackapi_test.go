package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentctl/agentctl/notify"
)

// slackapi starts a stand-in for Slack's Web API and response URLs, for
// a script:
//
//	slackapi NAME TOKEN
//
// $NAME is its URL: the Web API is $NAME/api/ (chat.postMessage,
// chat.update, views.open; each answers ok, postMessage with channel and
// a ts counting up from 1700000000.000001), and $NAME/hooks/N are
// response URLs. Each request is appended to name.log (NAME in lower
// case) as one JSON line,
// before it is answered: {"path":...,"auth":"ok"|"bad"|"none",
// "body":{...},"ts":...}; auth says whether the bearer token was TOKEN
// (the token itself is never logged).
func slackapi(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: slackapi NAME TOKEN")
	}
	name, token := args[0], args[1]
	logPath := ts.MkAbs(strings.ToLower(name) + ".log")
	var mu sync.Mutex
	posted := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		auth := "none"
		if h := r.Header.Get("Authorization"); h != "" {
			auth = "bad"
			if h == "Bearer "+token {
				auth = "ok"
			}
		}
		mu.Lock()
		defer mu.Unlock()
		line := struct {
			Path string `json:"path"`
			Auth string `json:"auth"`
			TS   string `json:"ts,omitempty"`
			Body any    `json:"body"`
		}{Path: r.URL.Path, Auth: auth, Body: json.RawMessage(body)}
		if !json.Valid(body) {
			line.Body = string(body)
		}
		answer := map[string]any{"ok": true}
		if r.URL.Path == "/api/chat.postMessage" {
			posted++
			var m struct{ Channel string }
			json.Unmarshal(body, &m)
			answer["channel"], answer["ts"] = m.Channel, fmt.Sprintf("1700000000.%06d", posted)
			line.TS = answer["ts"].(string)
		}
		b, _ := json.Marshal(line)
		f, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			f.Write(append(b, '\n'))
			f.Close()
		}
		if strings.HasPrefix(r.URL.Path, "/hooks/") {
			io.WriteString(w, "ok")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(answer)
	}))
	ts.Defer(srv.Close)
	ts.Setenv(name, srv.URL)
}

// slackpress sends agentctl serve an interaction as Slack would, signed
// with SECRET, and prints the answer's status and body:
//
//	slackpress [flags] SECRET URL
//
// By default it presses a button of the last message the stand-in's log
// (-log, default slack.log) shows posted: -press approve|decline (by
// -user, default U0ALICE). -submit REASON sends instead the Decline form
// the stand-in last opened, with REASON. -age D signs with a timestamp D
// old; -badsig 1 spoils the signature; -save FILE keeps the request as
// sent, and -replay FILE sends a kept one again, unchanged (with -upper
// 1, its signature's hex in capitals).
func slackpress(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("slackpress does not take !: it prints the status")
	}
	o := pressOpts{user: "U0ALICE", press: "approve", log: "slack.log"}
	for len(args) > 2 && strings.HasPrefix(args[0], "-") {
		flag, v := args[0], args[1]
		args = args[2:]
		switch flag {
		case "-user":
			o.user = v
		case "-press":
			o.press = v
		case "-submit":
			o.submit, o.press = v, ""
		case "-age":
			d, err := time.ParseDuration(v)
			ts.Check(err)
			o.age = d
		case "-badsig":
			o.badsig = v == "1"
		case "-save":
			o.save = ts.MkAbs(v)
		case "-replay":
			o.replay = ts.MkAbs(v)
		case "-upper":
			o.upper = v == "1"
		case "-log":
			o.log = v
		default:
			ts.Fatalf("slackpress: unknown flag %s", flag)
		}
	}
	if len(args) != 2 {
		ts.Fatalf("usage: slackpress [-user U] [-press approve|decline | -submit REASON] [-age D] [-badsig 1] [-save F | -replay F] SECRET URL")
	}
	secret, target := args[0], args[1]
	var body []byte
	var hdr http.Header
	if o.replay != "" {
		var kept struct {
			Header http.Header
			Body   string
		}
		b, err := os.ReadFile(o.replay)
		ts.Check(err)
		ts.Check(json.Unmarshal(b, &kept))
		body, hdr = []byte(kept.Body), kept.Header
		if o.upper { // the same signature, its hex in capitals
			hdr.Set("X-Slack-Signature", "v0="+strings.ToUpper(strings.TrimPrefix(hdr.Get("X-Slack-Signature"), "v0=")))
		}
	} else {
		body = pressBody(ts, o)
		stamp, sig := notify.SignSlack(secret, time.Now().Add(-o.age), body)
		if o.badsig {
			sig = strings.Replace(sig, "v0=", "v0=00", 1)[:len(sig)]
		}
		hdr = http.Header{"X-Slack-Request-Timestamp": {stamp}, "X-Slack-Signature": {sig},
			"Content-Type": {"application/x-www-form-urlencoded"}}
	}
	if o.save != "" {
		b, _ := json.Marshal(map[string]any{"Header": hdr, "Body": string(body)})
		ts.Check(os.WriteFile(o.save, b, 0o600))
	}
	req, err := http.NewRequest(http.MethodPost, target, bytes.NewReader(body))
	ts.Check(err)
	req.Header = hdr
	resp, err := http.DefaultClient.Do(req)
	ts.Check(err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Fprintf(ts.Stdout(), "status %d\n%s\n", resp.StatusCode, b)
}

type pressOpts struct {
	user, press, submit, log string
	age                      time.Duration
	badsig, upper            bool
	save, replay             string
}

// pressBody is the form Slack posts: payload=JSON.
func pressBody(ts *testscript.TestScript, o pressOpts) []byte {
	lines := slackLog(ts, o.log)
	var p map[string]any
	if o.submit != "" {
		var view struct {
			View struct {
				PrivateMetadata string `json:"private_metadata"`
				CallbackID      string `json:"callback_id"`
			} `json:"view"`
		}
		ts.Check(json.Unmarshal(lastAt(ts, lines, "/api/views.open").Body, &view))
		p = map[string]any{"type": "view_submission", "user": map[string]string{"id": o.user},
			"view": map[string]any{"callback_id": view.View.CallbackID, "private_metadata": view.View.PrivateMetadata,
				"state": map[string]any{"values": map[string]any{"reason": map[string]any{"reason": map[string]string{"type": "plain_text_input", "value": o.submit}}}}}}
	} else {
		post := lastAt(ts, lines, "/api/chat.postMessage")
		var m struct {
			Channel string
			Text    string
			Blocks  []map[string]any
		}
		ts.Check(json.Unmarshal(post.Body, &m))
		value := ""
		for _, b := range m.Blocks {
			if b["block_id"] == notify.ActionsBlockID {
				for _, e := range b["elements"].([]any) {
					if el := e.(map[string]any); el["action_id"] == "agentctl."+o.press {
						value, _ = el["value"].(string)
					}
				}
			}
		}
		base := strings.TrimSuffix(ts.Getenv("SLACK"), "/")
		p = map[string]any{"type": "block_actions", "user": map[string]string{"id": o.user}, "trigger_id": "trigger-1",
			"response_url": base + "/hooks/" + o.user,
			"container":    map[string]string{"type": "message", "channel_id": m.Channel, "message_ts": post.TS},
			"channel":      map[string]string{"id": m.Channel},
			"message":      map[string]any{"ts": post.TS, "text": m.Text, "blocks": m.Blocks},
			"actions": []map[string]string{{"action_id": "agentctl." + o.press, "value": value, "type": "button",
				"action_ts": fmt.Sprintf("%.6f", float64(time.Now().UnixNano())/1e9)}}}
	}
	b, err := json.Marshal(p)
	ts.Check(err)
	return []byte("payload=" + url.QueryEscape(string(b)))
}

// slackEntry is one line of the stand-in's log.
type slackEntry struct {
	Path string          `json:"path"`
	Body json.RawMessage `json:"body"`
	TS   string          `json:"ts"`
}

func slackLog(ts *testscript.TestScript, name string) []slackEntry {
	data, err := os.ReadFile(ts.MkAbs(name))
	ts.Check(err)
	// A line the stand-in is still writing (a read does not wait for a
	// write in progress) has no newline yet: only whole lines count.
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i]
	} else {
		data = nil
	}
	var out []slackEntry
	for _, l := range strings.Split(string(data), "\n") {
		if l == "" {
			continue
		}
		var e slackEntry
		ts.Check(json.Unmarshal([]byte(l), &e))
		out = append(out, e)
	}
	return out
}

func lastAt(ts *testscript.TestScript, lines []slackEntry, path string) slackEntry {
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i].Path == path {
			return lines[i]
		}
	}
	ts.Fatalf("slackpress: the stand-in's log has no %s", path)
	return slackEntry{}
}

package main

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentctl/agentctl/oncall/oncalltest"
)

// oncallapi starts a stand-in of PagerDuty's and Opsgenie's on-call APIs
// (package oncalltest) for a script:
//
//	oncallapi NAME CONFIG
//
// CONFIG is a JSON file of oncalltest.Config: the token and key it
// accepts, and who is on call on each schedule. $NAME is its URL. Each
// request is appended to name.log (NAME in lower case) as one JSON line,
// {"path":...,"query":...,"auth":"ok"|"bad"|"none","status":...}: the
// credentials themselves are never logged.
func oncallapi(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: oncallapi NAME CONFIG")
	}
	var cfg oncalltest.Config
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[1])), &cfg))
	logPath := ts.MkAbs(strings.ToLower(args[0]) + ".log")
	st := oncalltest.New(cfg)
	st.OnRequest = func(r oncalltest.Request) {
		if f, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			enc := json.NewEncoder(f)
			enc.SetEscapeHTML(false)
			enc.Encode(r)
			f.Close()
		}
	}
	srv := httptest.NewServer(st.Handler())
	ts.Defer(srv.Close)
	ts.Setenv(args[0], srv.URL)
}

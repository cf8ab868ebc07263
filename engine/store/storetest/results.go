package storetest

import (
	"context"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/engine/store"
)

// A call's result is stored as a JSON object or as text, as the move
// that settled it says; moving it again (a retry) says anew.
func testResultObject(e *env) {
	s := e.handle()
	newRun(e, s, "01A", lease, store.CallApproved, store.CallApproved)
	const obj = `{"exitCode":0,"stdout":"hi\n","stderr":""}`
	for _, m := range []store.Move{
		{RunID: "01A", CallID: "call_1", From: store.CallExecuting, To: store.CallSucceeded, Result: obj, ResultObject: true},
		{RunID: "01A", CallID: "call_2", From: store.CallExecuting, To: store.CallFailed, Result: "error: no"},
	} {
		if err := s.MoveCall(e.ctx, lease, start("01A", m.CallID)); err != nil {
			e.t.Fatal(err)
		}
		if err := s.MoveCall(e.ctx, lease, m); err != nil {
			e.t.Fatal(err)
		}
	}
	calls, err := s.Calls(e.ctx, "01A")
	if err != nil {
		e.t.Fatal(err)
	}
	if c := calls[0]; c.Result != obj || !c.ResultObject {
		e.t.Errorf("an object result read back as %q, object %v", c.Result, c.ResultObject)
	}
	if c := calls[1]; c.Result != "error: no" || c.ResultObject {
		e.t.Errorf("a text result read back as %q, object %v", c.Result, c.ResultObject)
	}
}

// OldResults checks that call results and tool-result events written
// before results could be JSON objects read, once the schema is
// migrated, as objects when they have the shape of an exec result
// ({exitCode, stdout, stderr[, error]}) or an http result ({status[,
// headers], body}) and nothing else, and as text otherwise. put writes
// the results as calls call_1, call_2, ... of run 01OLD (tool t, status
// succeeded) and the events as its tool-result events, into a database
// left at the schema before the migration; reopen opens it again.
func OldResults(t *testing.T, put func(results, events []string), reopen func() store.Store) {
	t.Helper()
	cases := []struct {
		result string
		object bool
	}{
		{`{"exitCode":0,"stdout":"hi\n","stderr":""}`, true},
		{`{"exitCode":-1,"stdout":"","stderr":"","error":"timed out after 1s"}`, true},
		{`{"status":200,"headers":{"Content-Type":"application/json"},"body":{"id":"42"}}`, true},
		{`{"status":404,"body":"no such thing\n"}`, true},
		{`{"a":1}`, false},
		{`{"exitCode":0,"stdout":"x","stderr":"","more":1}`, false},
		{`{"exitCode":"0","stdout":"x","stderr":""}`, false},
		{`{"exitCode":0,`, false},
		{`error: run x: no such file or directory`, false},
		{``, false},
	}
	var results []string
	for _, c := range cases {
		results = append(results, c.result)
	}
	events := []string{
		`{"callId":"call_1","result":"{\"exitCode\":0,\"stdout\":\"hi\\n\",\"stderr\":\"\"}","status":"succeeded","tool":"t"}`,
		`{"callId":"call_3","result":"{\"status\":200,\"headers\":{\"Content-Type\":\"application/json\"},\"body\":{\"id\":\"42\"}}","status":"succeeded","tool":"t"}`,
		`{"callId":"call_5","result":"{\"a\":1}","status":"succeeded","tool":"t"}`,
		`{"callId":"call_9","result":"error: run x: no such file or directory","status":"failed","tool":"t"}`,
		`{}`,
	}
	put(results, events)
	db := reopen()
	defer db.Close()
	ctx := context.Background()
	calls, err := db.Calls(ctx, "01OLD")
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != len(cases) {
		t.Fatalf("%d calls after the migration, want %d", len(calls), len(cases))
	}
	for i, c := range calls {
		if c.Result != cases[i].result || c.ResultObject != cases[i].object {
			t.Errorf("result %q: object %v after the migration, want %v (text unchanged)", c.Result, c.ResultObject, cases[i].object)
		}
	}
	evs, err := db.Events(ctx, "01OLD", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, string(e.Data))
	}
	want := []string{
		`{"callId":"call_1","result":{"exitCode":0,"stdout":"hi\n","stderr":""},"status":"succeeded","tool":"t"}`,
		`{"callId":"call_3","result":{"status":200,"headers":{"Content-Type":"application/json"},"body":{"id":"42"}},"status":"succeeded","tool":"t"}`,
		events[2], events[3], events[4],
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("tool-result events after the migration:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

package web

import (
	"encoding/json"
	"testing"

	"github.com/agentctl/agentctl/api"
)

// A choice among numbers is sent as the number chosen, not its text.
func TestEnumOfNumbers(t *testing.T) {
	fs := fieldsOf(json.RawMessage(`{"type":"object","properties":{"level":{"enum":[1,2,3]},"env":{"enum":["a","b"]}}}`))
	if len(fs) != 2 || fs[0].Name != "env" || fs[0].Type != "enum" || fs[1].Type != "enum-json" || fs[1].Enum[1] != "2" {
		t.Fatalf("fields: %+v", fs)
	}
	if v := value("enum-json", []string{"2"}); v != float64(2) {
		t.Errorf("the choice 2 is sent as %#v, want the number", v)
	}
	if v := value("enum", []string{"b"}); v != "b" {
		t.Errorf("the choice b is sent as %#v", v)
	}
}

// Redirects stay on the server.
func TestSafeNext(t *testing.T) {
	for next, want := range map[string]string{"/runs/01A": "/runs/01A", "/?agent=ops": "/?agent=ops", "/\t/evil": "/", "//evil": "/",
		"/\\evil": "/", "https://evil": "/", "/\u3000/evil": "/", "/%2F/evil": "/", "": "/", "/\r\nSet-Cookie:x": "/"} {
		if got := safeNext(next); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", next, got, want)
		}
	}
}

// The inbox says who may decide a call as the API gives it: the
// server's approvers when the spec names none; every list when a
// supervisor's gate holds the call as well as its own; the starter
// under separateDuties.
func TestWhoMayDecide(t *testing.T) {
	for _, c := range []struct {
		a    api.Approval
		want string
	}{
		{api.Approval{}, "the server's approvers"},
		{api.Approval{Approvers: []string{"alice", "group:sre"}}, "alice, group:sre"},
		{api.Approval{Approvers: []string{"group:dba"}, AlsoApprovers: [][]string{{"alice", "dave"}}, NotBy: "bob"},
			"one of group:dba who is also one of alice, dave; not bob, who started the run (separateDuties)"},
	} {
		if got := itemOf(c.a, nil).Who; got != c.want {
			t.Errorf("%+v: who may decide %q, want %q", c.a, got, c.want)
		}
	}
}

package web

import (
	"encoding/json"
	"testing"
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

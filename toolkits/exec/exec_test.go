package exec

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/spec/tmpl"
	"github.com/agentctl/agentctl/toolkits"
)

func action(t *testing.T, timeout time.Duration, argv ...string) *Action {
	t.Helper()
	e := &spec.Exec{Timeout: timeout}
	for _, a := range argv {
		s, err := tmpl.Parse(a, tmpl.Vars{"input": map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		e.Command = append(e.Command, s)
	}
	return New(e)
}

func run(t *testing.T, a *Action, input map[string]any) (Output, toolkits.Result) {
	t.Helper()
	res, err := a.Do(context.Background(), toolkits.Call{RunID: "R", CallID: "C", Input: input})
	if err != nil {
		t.Fatal(err)
	}
	var out Output
	if err := json.Unmarshal([]byte(res.Content), &out); err != nil {
		t.Fatal(err)
	}
	return out, res
}

// Model-produced values stay one argv element each: no shell, no splitting.
func TestArgumentsStayLiteral(t *testing.T) {
	evil := "; rm -rf / $(id) `x` && echo pwned"
	out, res := run(t, action(t, 0, "printf", "[%s]\n", "${{ input.s }}", "pre ${{ input.s }}"), map[string]any{"s": evil})
	want := "[" + evil + "]\n[pre " + evil + "]\n"
	if res.Failed || out.Stdout != want {
		t.Errorf("stdout %q, want %q", out.Stdout, want)
	}
}

func TestExitCodeIsAResult(t *testing.T) {
	out, res := run(t, action(t, 0, "sh", "-c", "echo oops >&2; exit 3"), nil)
	if !res.Failed || out.ExitCode != 3 || out.Stderr != "oops\n" {
		t.Errorf("got %+v failed=%v", out, res.Failed)
	}
}

func TestEnvironmentCarriesIdempotencyKey(t *testing.T) {
	out, _ := run(t, action(t, 0, "sh", "-c", `echo "$AGENTCTL_RUN_ID:$AGENTCTL_CALL_ID"`), nil)
	if out.Stdout != "R:C\n" {
		t.Errorf("stdout %q, want R:C", out.Stdout)
	}
}

func TestTimeout(t *testing.T) {
	out, res := run(t, action(t, 50*time.Millisecond, "sleep", "10"), nil)
	if !res.Failed || !strings.Contains(out.Error, "timed out after 50ms") {
		t.Errorf("got %+v", out)
	}
}

func TestOutputCapped(t *testing.T) {
	a := action(t, 0, "head", "-c", "100000", "/dev/zero")
	a.maxOutput = 1000
	out, _ := run(t, a, nil)
	if len(out.Stdout) > 1100 || !strings.HasSuffix(out.Stdout, "[... 99000 bytes truncated]") {
		t.Errorf("stdout of %d bytes ending %q", len(out.Stdout), out.Stdout[max(0, len(out.Stdout)-40):])
	}
}

func TestMissingCommand(t *testing.T) {
	_, err := action(t, 0, "no-such-command-here").Do(context.Background(), toolkits.Call{})
	if err == nil || !strings.Contains(err.Error(), "no-such-command-here") {
		t.Errorf("err = %v", err)
	}
}

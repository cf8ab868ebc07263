package exec

import (
	"context"
	"encoding/json"
	"os"
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

// A secret straddling the maxOutput cut is cut whole, on stdout and
// stderr, before the output is truncated: no prefix of it is kept; the
// count of truncated bytes is the command's.
func TestOutputCapRedactsFirst(t *testing.T) {
	const secret = "SECRETVALUEABCDEFGHIJ"
	a := action(t, 0, "sh", "-c", `printf "%0985d%s" 0 "$E"; printf "%0990d%s" 0 "$E" >&2`)
	a.env = map[string]*tmpl.String{"E": mustParse(t, "${{ env.E }}")}
	a.maxOutput = 1000
	res, err := a.Do(context.Background(), toolkits.Call{Env: map[string]string{"E": secret}})
	if err != nil {
		t.Fatal(err)
	}
	var out Output
	if err := json.Unmarshal([]byte(res.Content), &out); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{out.Stdout, out.Stderr} {
		if strings.Contains(s, "SECRET") || !strings.Contains(s, "[env.E]") || !strings.HasSuffix(s, "bytes truncated]") {
			t.Errorf("output ends %q", s[len(s)-60:])
		}
	}
	if !strings.HasSuffix(out.Stdout, "[... 6 bytes truncated]") {
		t.Errorf("stdout ends %q", out.Stdout[len(out.Stdout)-40:])
	}
}

func mustParse(t *testing.T, src string) *tmpl.String {
	t.Helper()
	s, err := tmpl.Parse(src, tmpl.Vars{"env": map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestMissingCommand(t *testing.T) {
	_, err := action(t, 0, "no-such-command-here").Do(context.Background(), toolkits.Call{})
	if err == nil || !strings.Contains(err.Error(), "no-such-command-here") {
		t.Errorf("err = %v", err)
	}
}

// A command whose shell script holds a placeholder never runs, even from
// a run's stored spec that validate would now refuse: the value would be
// shell code.
func TestShellPlaceholderRefused(t *testing.T) {
	dir := t.TempDir()
	a := action(t, time.Second, "sh", "-c", "echo db ${{ input.db }} > "+dir+"/out")
	_, err := a.Do(context.Background(), toolkits.Call{RunID: "R", CallID: "C", Input: map[string]any{"db": "a; touch " + dir + "/pwned"}})
	if err == nil || !strings.Contains(err.Error(), "placeholder in an argument run as code") {
		t.Fatalf("Do: %v, want a refusal", err)
	}
	if _, err := os.Stat(dir + "/out"); err == nil {
		t.Error("the command ran")
	}
	// A value after the script is data: it runs.
	out, _ := run(t, action(t, time.Second, "sh", "-c", `echo "db $1"`, "sh", "${{ input.db }}"), map[string]any{"db": "a; echo no"})
	if out.Stdout != "db a; echo no\n" {
		t.Errorf("stdout %q", out.Stdout)
	}
}

// A value that begins an argument where a program parses options, and
// that the tool's schema does not constrain (a run's spec from before
// validate refused it, or a format, which is not asserted), is refused
// when it would begin with "-": sort --output= never writes the file.
// After --, or with a schema that keeps "-" out, the command runs.
func TestOptionValueRefused(t *testing.T) {
	dir := t.TempDir()
	_, err := action(t, time.Second, "sort", "${{ input.src }}").Do(context.Background(), toolkits.Call{Input: map[string]any{"src": "--output=" + dir + "/pwned"}})
	if err == nil || !strings.Contains(err.Error(), `command[1] would begin with "-", and sort would read the value as an option`) {
		t.Fatalf("Do: %v, want a refusal", err)
	}
	if _, err := os.Stat(dir + "/pwned"); err == nil {
		t.Error("sort wrote the file")
	}
	if _, err := action(t, time.Second, "sort", "-${{ input.flag }}", "/dev/null").Do(context.Background(), toolkits.Call{Input: map[string]any{"flag": "r"}}); err == nil {
		t.Error("-${{ input.flag }} without an enum ran")
	}
	out, res := run(t, action(t, time.Second, "sort", "--", "${{ input.src }}"), map[string]any{"src": "--output=" + dir + "/pwned"})
	if !res.Failed || !strings.Contains(out.Stderr, "--output=") {
		t.Errorf("after --: %+v", out)
	}
	// Kit reads the tool's schema: an enum keeps "-" out, so the value is
	// not checked again.
	tool := &spec.Tool{Name: "t", Input: &spec.Schema{Doc: map[string]any{"properties": map[string]any{"flag": map[string]any{"enum": []any{"r"}}}}},
		Exec: action(t, time.Second, "sort", "-${{ input.flag }}", "/dev/null").spec(t)}
	if a := newAction(tool.Exec, tool); len(a.options) != 0 {
		t.Errorf("options %+v, want none with an enum", a.options)
	}
	if out, _ := run(t, action(t, time.Second, "sort", "${{ input.src }}"), map[string]any{"src": "/dev/null"}); out.ExitCode != 0 {
		t.Errorf("a value that is no option: %+v", out)
	}
}

// spec returns the exec declaration a test action was built from.
func (a *Action) spec(t *testing.T) *spec.Exec {
	t.Helper()
	return &spec.Exec{Command: a.argv, Timeout: a.timeout}
}

// Each program that runs an argument as code refuses a placeholder there
// when the call runs too: a run's stored spec may predate the rule.
func TestCodePlaceholderRefused(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(dir+"/in.txt", []byte("a\n"), 0o644)
	a := action(t, time.Second, "sed", "-e", "s/a/${{ input.to }}/", dir+"/in.txt")
	_, err := a.Do(context.Background(), toolkits.Call{Input: map[string]any{"to": "b/;e touch " + dir + "/pwned;#"}})
	if err == nil || !strings.Contains(err.Error(), "placeholder in an argument run as code (the script of sed") {
		t.Fatalf("Do: %v, want a refusal", err)
	}
	if _, err := os.Stat(dir + "/pwned"); err == nil {
		t.Error("sed ran the command")
	}
}

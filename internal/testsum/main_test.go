package main

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"
)

const input = `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:1: chatter of a passing test\n"}
{"Action":"pass","Package":"p","Test":"TestA","Elapsed":0.5}
{"Action":"run","Package":"p","Test":"TestS"}
{"Action":"run","Package":"p","Test":"TestS/one"}
{"Action":"output","Package":"p","Test":"TestS/one","Output":"    s_test.go:9: the reason it failed\n"}
{"Action":"fail","Package":"p","Test":"TestS/one","Elapsed":3}
{"Action":"run","Package":"p","Test":"TestS/two"}
{"Action":"skip","Package":"p","Test":"TestS/two","Elapsed":0}
{"Action":"fail","Package":"p","Test":"TestS","Elapsed":9}
{"Action":"output","Package":"p","Output":"FAIL\n"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t9.1s\n"}
{"Action":"fail","Package":"p","Elapsed":9.1}
# q [q.test]
./q.go:1:1: a build error
{"Action":"output","Package":"q","Output":"FAIL\tq [build failed]\n"}
{"Action":"fail","Package":"q","Elapsed":0}
{"Action":"run","Package":"r","Test":"TestHang"}
{"Action":"output","Package":"r","Test":"TestHang","Output":"    r_test.go:3: the last words of a test that never ended\n"}
{"Action":"fail","Package":"r","Elapsed":600}
`

func TestSummary(t *testing.T) {
	var out bytes.Buffer
	code := run(strings.NewReader(input), &out, []string{"-slowest", "2"}, time.Now().Add(-90*time.Second))
	got := out.String()
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{
		"the reason it failed\n",
		"FAIL\tp\t9.1s\n",
		"./q.go:1:1: a build error\n",
		"the last words of a test that never ended\n",
		"\ntests: 1 passed, 4 failed, 1 skipped\n(tests and subtests; a package that failed outside any test, such as one that does not build, counts as one failure) in 1m30s wall time\n",
		"the 2 slowest:\n     3.00s  p TestS/one\n     0.50s  p TestA\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the summary lacks %q:\n%s", want, got)
		}
	}
	// A passing test's output, a parent among the slowest, and the bare
	// FAIL line are not printed.
	for _, not := range []string{"chatter", "p TestS\n", "\nFAIL\n"} {
		if strings.Contains(got, not) {
			t.Errorf("the summary has %q:\n%s", not, got)
		}
	}
}

func TestSince(t *testing.T) {
	var out bytes.Buffer
	since := strconv.FormatInt(time.Now().Add(-2*time.Hour).Unix(), 10)
	run(strings.NewReader(""), &out, []string{"-since", since}, time.Now())
	if !strings.Contains(out.String(), " in 2h0m") {
		t.Errorf("-since is not when the run began:\n%s", out.String())
	}
}

func TestSummaryExitCodes(t *testing.T) {
	pass := `{"Action":"pass","Package":"p","Test":"TestA","Elapsed":0.1}` + "\n" + `{"Action":"pass","Package":"p","Elapsed":0.1}` + "\n"
	for _, c := range []struct {
		in   string
		want int
	}{
		{pass, 0},
		{"not json\n" + pass, 0}, // passed on as it is
		{"", 1},                  // no test ran
		{pass + `{"Action":"fail","Package":"q","Elapsed":0.1}` + "\n", 1}, // a package failed outside any test
	} {
		var out bytes.Buffer
		if code := run(strings.NewReader(c.in), &out, nil, time.Now()); code != c.want {
			t.Errorf("exit %d, want %d, for\n%s\nprinted\n%s", code, c.want, c.in, out.String())
		}
	}
}

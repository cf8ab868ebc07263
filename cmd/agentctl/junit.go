package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/agentctl/agentctl/internal/scenario"
)

// testFormat is agentctl test's -o: text, json or junit.
type testFormat string

func (f *testFormat) String() string { return string(*f) }
func (f *testFormat) Set(s string) error {
	switch s {
	case "text", "json", "junit":
		*f = testFormat(s)
		return nil
	}
	return fmt.Errorf("want text, json or junit, not %q", s)
}

// The JUnit XML that GitLab, Jenkins and the like read.
type (
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Errors   int          `xml:"errors,attr"`
		Skipped  int          `xml:"skipped,attr"`
		Time     string       `xml:"time,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name     string      `xml:"name,attr"`
		Tests    int         `xml:"tests,attr"`
		Failures int         `xml:"failures,attr"`
		Errors   int         `xml:"errors,attr"`
		Skipped  int         `xml:"skipped,attr"`
		Time     string      `xml:"time,attr"`
		Cases    []junitCase `xml:"testcase"`
	}
	junitCase struct {
		Name      string        `xml:"name,attr"`
		Classname string        `xml:"classname,attr"`
		File      string        `xml:"file,attr,omitempty"`
		Time      string        `xml:"time,attr"`
		Failure   *junitProblem `xml:"failure,omitempty"`
		Error     *junitProblem `xml:"error,omitempty"`
		Skipped   *junitProblem `xml:"skipped,omitempty"`
		SystemOut string        `xml:"system-out,omitempty"`
	}
	junitProblem struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	}
)

// writeJUnit writes a test report as JUnit XML: a test case per
// scenario (its failing line in the failure's message, its log in the
// failure), and an error case per failure
// outside any scenario.
func writeJUnit(w io.Writer, r *scenario.Report) error {
	s := junitSuite{Name: "agentctl test"}
	total := 0.0
	for _, res := range r.Results {
		c := junitCase{Name: res.Name, Classname: "agentctl.test", File: res.File, Time: fmt.Sprintf("%.3f", res.Seconds)}
		switch {
		case res.Skipped:
			c.Skipped = &junitProblem{Message: "skipped", Text: xmlText(res.Log)}
			s.Skipped++
		case !res.Passed:
			msg := res.Failure()
			if msg == "" {
				msg = "scenario failed"
			}
			c.Failure = &junitProblem{Message: xmlText(msg), Text: xmlText(res.Log)}
			s.Failures++
		}
		total += res.Seconds
		s.Cases = append(s.Cases, c)
	}
	for i, e := range r.Errors {
		s.Cases = append(s.Cases, junitCase{Name: fmt.Sprintf("error %d", i+1), Classname: "agentctl.test", Time: "0",
			Error: &junitProblem{Message: xmlText(firstLine(e)), Text: xmlText(e)}})
		s.Errors++
	}
	s.Tests, s.Time = len(s.Cases), fmt.Sprintf("%.3f", total)
	doc := junitSuites{Name: "agentctl test", Tests: s.Tests, Failures: s.Failures, Errors: s.Errors, Skipped: s.Skipped, Time: s.Time,
		Suites: []junitSuite{s}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// xmlText keeps only what XML 1.0 may hold: a log with a control
// character (a script's output) would make the whole report unreadable.
func xmlText(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r != 0xFFFE && r != 0xFFFF {
			return r
		}
		return '\uFFFD'
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

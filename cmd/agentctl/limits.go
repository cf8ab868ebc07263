package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/internal/textcheck"
	"github.com/agentctl/agentctl/spec"
)

// limits cap what agentctl reads, so that no input can exhaust memory or
// fill the database: over a cap, a command exits 2 and stores nothing.
// Each has a default and an environment variable that overrides it
// (docs/specs.md, "Limits").
type limits struct {
	input  int64 // --input or standard input, send's message, --args, --data, --data-file
	spec   int64 // each spec file
	args   int   // a model's tool-call arguments
	result int   // a tool's result as stored
}

// defaultMaxInput is the default cap on a user's input.
const defaultMaxInput = 1 << 20

// limitVars are the variables that override each limit.
var limitVars = [...]struct {
	name string
	set  func(*limits, int64)
}{
	{"AGENTCTL_MAX_INPUT", func(l *limits, n int64) { l.input = n }},
	{"AGENTCTL_MAX_SPEC", func(l *limits, n int64) { l.spec = n }},
	{"AGENTCTL_MAX_ARGS", func(l *limits, n int64) { l.args = int(min(n, 1<<40)) }},
	{"AGENTCTL_MAX_RESULT", func(l *limits, n int64) { l.result = int(min(n, 1<<40)) }},
}

// readLimits reads the limits: the defaults, overridden by the
// environment.
func readLimits() (limits, error) {
	l := limits{input: defaultMaxInput, spec: spec.DefaultMaxFile, args: engine.DefaultMaxArgs, result: engine.DefaultMaxResult}
	for _, v := range limitVars {
		text := os.Getenv(v.name)
		if text == "" {
			continue
		}
		n, err := spec.ParseSize(text)
		if err != nil {
			return l, inputErr(fmt.Errorf("%s: %w", v.name, err))
		}
		v.set(&l, n)
	}
	return l, nil
}

// engineLimits are the limits the engine applies.
func (l limits) engineLimits() engine.Limits {
	return engine.Limits{MaxArgs: l.args, MaxResult: l.result}
}

// errTooLarge is an input over its cap.
var errTooLarge = errors.New("too large")

// check refuses text over the input cap; what names the input.
func (l limits) check(what string, text []byte) error {
	if int64(len(text)) > l.input {
		return l.over(what)
	}
	return utf8Text(what, text)
}

// utf8Text refuses text that is not UTF-8, saying where, rather than
// store it changed.
func utf8Text(what string, text []byte) error {
	if e := textcheck.Text(string(text)); e != nil {
		return inputErr(fmt.Errorf("%s: %v: agentctl takes UTF-8 text (iconv converts other encodings); nothing was stored", what, e))
	}
	return nil
}

func (l limits) over(what string) error {
	return inputErr(fmt.Errorf("%s is %w: over %d bytes (AGENTCTL_MAX_INPUT raises the limit); nothing was stored", what, errTooLarge, l.input))
}

// read reads r whole, refusing more than the input cap without reading
// further.
func (l limits) read(what string, r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, l.input+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if int64(len(b)) > l.input {
		return nil, l.over(what)
	}
	return b, utf8Text(what, b)
}

package engine

import (
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentctl/agentctl/spec"
)

// describeSchemaError renders a JSON Schema validation error as one line
// per violation: "/pointer: message".
func describeSchemaError(err error) error {
	vs := violationsOf(err)
	if vs == nil {
		return err
	}
	lines := make([]string, len(vs))
	for i, v := range vs {
		lines[i] = v.Pointer + ": " + v.Message
	}
	return errors.New(strings.Join(lines, "; "))
}

// Violation is one place input breaks its schema.
type Violation struct {
	Pointer string // a JSON pointer into the input, "/" for the whole of it
	Message string // what is wrong there
}

// violationsOf lists a JSON Schema validation error's violations; nil
// for another error.
func violationsOf(err error) []Violation {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil
	}
	var out []Violation
	for _, v := range spec.Violations(ve) {
		p := v.Pointer()
		if v.Key != "" {
			p = strings.TrimSuffix(p, "/") + "/" + v.Key
		}
		out = append(out, Violation{Pointer: p, Message: v.Msg})
	}
	return out
}

// describeViolations renders violations as one indented line each, for
// users.
func describeViolations(vs []Violation) error {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "\n  %s: %s", v.Pointer, v.Message)
	}
	return errors.New(b.String())
}

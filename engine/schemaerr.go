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
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	vs := spec.Violations(ve)
	lines := make([]string, len(vs))
	for i, v := range vs {
		p := v.Pointer()
		if v.Key != "" {
			p = strings.TrimSuffix(p, "/") + "/" + v.Key
		}
		lines[i] = p + ": " + v.Msg
	}
	return errors.New(strings.Join(lines, "; "))
}

// describeViolations renders a JSON Schema validation error as one
// indented line per violation, for users.
func describeViolations(err error) error {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	var b strings.Builder
	for _, v := range spec.Violations(ve) {
		p := v.Pointer()
		if v.Key != "" {
			p = strings.TrimSuffix(p, "/") + "/" + v.Key
		}
		fmt.Fprintf(&b, "\n  %s: %s", p, v.Msg)
	}
	return errors.New(b.String())
}

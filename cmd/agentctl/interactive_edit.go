package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"reflect"
	"strings"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
)

// editArgs opens the call's arguments (or the last edit of them) in the
// editor and approves the call with what comes back, once it is JSON
// the tool's input schema accepts (Decide checks it before writing
// anything). Unchanged arguments approve the call as it is.
func (s *session) editArgs(ctx context.Context, v *engine.RunView, p engine.PendingView) (*engine.RunView, bool, error) {
	start, ok := s.drafts[p.CallID]
	if !ok {
		start = []byte(prettyJSON(p.Args) + "\n")
	}
	b, ok, err := s.editJSON(p, start, "arguments")
	if err != nil || !ok {
		return nil, true, err
	}
	d := s.decision(p, store.Approve)
	if sameJSON(b, p.Args) {
		fmt.Fprintln(s.w, "the arguments are unchanged: approving them as they are")
		return s.decide(ctx, v, p, d)
	}
	d.Args = compactJSON(b)
	return s.decide(ctx, v, p, d)
}

// editResume opens resume data in the editor, starting from a template
// made from the call's resumeSchema (or the last edit), and resumes the
// call with it once the resumeSchema accepts it (checked by Decide
// before anything is written). An unchanged template sends nothing.
func (s *session) editResume(ctx context.Context, v *engine.RunView, p engine.PendingView) (*engine.RunView, bool, error) {
	tmpl := resumeTemplate(p.ResumeSchema)
	start, ok := s.drafts[p.CallID]
	if !ok {
		start = tmpl
	}
	b, ok, err := s.editJSON(p, start, "resume data")
	if err != nil || !ok {
		return nil, true, err
	}
	if bytes.Equal(bytes.TrimSpace(b), bytes.TrimSpace(tmpl)) {
		fmt.Fprintln(s.w, "the template is unchanged: nothing was sent; fill it in, or decline")
		return nil, true, nil
	}
	d := s.decision(p, store.Resume)
	d.Data = compactJSON(b)
	return s.decide(ctx, v, p, d)
}

// editJSON has the user edit start, and returns the JSON that comes
// back, kept as the call's draft; false, after saying why, when there
// is none to use (the editor failed, an empty file, not JSON).
func (s *session) editJSON(p engine.PendingView, start []byte, what string) ([]byte, bool, error) {
	b, err := s.edit(p.CallID, start)
	if err != nil {
		fmt.Fprintf(s.w, "%v\nnothing was recorded\n", err)
		return nil, false, nil
	}
	if len(bytes.TrimSpace(b)) == 0 {
		fmt.Fprintf(s.w, "the %s are empty: nothing was recorded\n", what)
		return nil, false, nil
	}
	s.drafts[p.CallID] = b
	if err := s.a.limits.check("the edited "+what, b); err != nil {
		fmt.Fprintf(s.w, "%v\n", err)
		return nil, false, nil
	}
	if msg := jsonProblem(b); msg != "" {
		fmt.Fprintf(s.w, "the %s are not JSON: %s\nnothing was recorded; edit again, or answer otherwise\n", what, msg)
		return nil, false, nil
	}
	return b, true, nil
}

// edit writes text to a temporary file only this user may read, runs
// the editor on it, and returns what the file holds afterwards; the file
// is removed.
func (s *session) edit(callID string, text []byte) ([]byte, error) {
	f, err := os.CreateTemp("", "agentctl-"+strings.ReplaceAll(callID, "/", "-")+"-*.json")
	if err != nil {
		return nil, fmt.Errorf("edit: %w", err)
	}
	path := f.Name()
	defer os.Remove(path)
	_, err = f.Write(text)
	if err = errors.Join(err, f.Chmod(0o600), f.Close()); err != nil {
		return nil, fmt.Errorf("edit: write %s: %w", path, err)
	}
	argv := editorArgv()
	cmd := exec.Command(argv[0], append(argv[1:], path)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.a.stdin, unpainted(s.a.stdout), s.a.stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("editor %s: %w", strings.Join(argv, " "), err)
	}
	g, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("edit: %w", err)
	}
	defer g.Close()
	return s.a.limits.read("the edited file", g)
}

// editorArgv is the editor to run, without a shell: $VISUAL, else
// $EDITOR, split on white space ("code --wait"), else vi.
func editorArgv() []string {
	for _, k := range []string{"VISUAL", "EDITOR"} {
		if f := strings.Fields(os.Getenv(k)); len(f) > 0 {
			return f
		}
	}
	return []string{"vi"}
}

// unpainted is standard output as the process has it, for a program
// that needs the terminal itself.
func unpainted(w io.Writer) io.Writer {
	if p, ok := w.(painted); ok {
		return p.Writer
	}
	return w
}

// prettyJSON is b indented for people; b as it is when it is not JSON.
func prettyJSON(b []byte) string {
	if len(b) == 0 {
		return "null"
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return string(b)
	}
	return out.String()
}

// compactJSON is b without insignificant white space.
func compactJSON(b []byte) json.RawMessage {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return json.RawMessage(b)
	}
	return out.Bytes()
}

// sameJSON reports whether a and b hold the same JSON value.
func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// jsonProblem says where b is not one JSON value (line and column), ""
// when it is.
func jsonProblem(b []byte) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	err := dec.Decode(&v)
	if err == nil {
		if _, err := dec.Token(); err != io.EOF {
			return fmt.Sprintf("%s: more after the value", position(b, dec.InputOffset()))
		}
		return ""
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s: %v", position(b, se.Offset-1), se) // the byte read last
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Sprintf("%s: unexpected end of the file", position(b, int64(len(b))))
	}
	return err.Error()
}

// position names byte offset off of b as line and column.
func position(b []byte, off int64) string {
	off = min(max(off, 0), int64(len(b)))
	before := b[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("line %d, column %d", line, col)
}

// resumeTemplate is resume data to start from for a resumeSchema: an
// object with each of its properties, the required ones first, each set
// to its default, else its const, else the first of its enum, else an
// empty value of its type.
func resumeTemplate(schema json.RawMessage) []byte {
	v := placeholder(schema, 0)
	if _, ok := v.(orderedObject); !ok {
		v = orderedObject{}
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return []byte("{}\n")
	}
	return append(b, '\n')
}

// schemaNode is what placeholder reads of a JSON Schema.
type schemaNode struct {
	Type       json.RawMessage   `json:"type"`
	Default    json.RawMessage   `json:"default"`
	Const      json.RawMessage   `json:"const"`
	Enum       []json.RawMessage `json:"enum"`
	Properties json.RawMessage   `json:"properties"`
	Required   []string          `json:"required"`
	AnyOf      []json.RawMessage `json:"anyOf"`
	OneOf      []json.RawMessage `json:"oneOf"`
}

// placeholder is a value that stands for what schema describes.
func placeholder(schema json.RawMessage, depth int) any {
	var n schemaNode
	if depth > 8 || json.Unmarshal(schema, &n) != nil {
		return nil
	}
	switch {
	case n.Default != nil:
		return n.Default
	case n.Const != nil:
		return n.Const
	case len(n.Enum) > 0:
		return n.Enum[0]
	case n.Properties != nil:
		return objectPlaceholder(n, depth)
	case len(n.AnyOf) > 0:
		return placeholder(n.AnyOf[0], depth+1)
	case len(n.OneOf) > 0:
		return placeholder(n.OneOf[0], depth+1)
	}
	switch schemaType(n.Type) {
	case "object":
		return objectPlaceholder(n, depth)
	case "array":
		return []any{}
	case "string":
		return ""
	case "integer", "number":
		return 0
	case "boolean":
		return false
	}
	return nil
}

// schemaType is a schema's type: the first but null of a list.
func schemaType(raw json.RawMessage) string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return one
	}
	var many []string
	json.Unmarshal(raw, &many)
	for _, t := range many {
		if t != "null" {
			return t
		}
	}
	return ""
}

// objectPlaceholder is an object with a placeholder for each property
// of n, the required ones first, then the others in the schema's order.
func objectPlaceholder(n schemaNode, depth int) orderedObject {
	props := orderedFields(n.Properties)
	obj := orderedObject{}
	seen := map[string]bool{}
	add := func(k string, schema json.RawMessage) {
		if !seen[k] {
			seen[k] = true
			obj = append(obj, orderedField{k, placeholder(schema, depth+1)})
		}
	}
	for _, k := range n.Required {
		for _, f := range props {
			if f.key == k {
				add(k, f.raw)
			}
		}
	}
	for _, f := range props {
		add(f.key, f.raw)
	}
	return obj
}

// rawField is a field of a JSON object as it is written.
type rawField struct {
	key string
	raw json.RawMessage
}

// orderedFields are the fields of the JSON object b, in order; nil when
// b is not one.
func orderedFields(b json.RawMessage) []rawField {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var out []rawField
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return out
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return out
		}
		out = append(out, rawField{key, v})
	}
	return out
}

// orderedObject is a JSON object that keeps its fields' order.
type orderedObject []orderedField

type orderedField struct {
	key   string
	value any
}

// MarshalJSON writes the fields in order.
func (o orderedObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(f.key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(f.value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

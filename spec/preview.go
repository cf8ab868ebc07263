package spec

import "time"

// DefaultPreviewTimeout bounds a preview whose declaration sets no
// timeout.
const DefaultPreviewTimeout = 30 * time.Second

// Preview declares an action run before a tool's call waits for a human:
// what it shows is attached to the approval. It has one action (Exec,
// HTTP, or File with op read or list), with the tool's placeholders; by
// the author's duty it changes nothing.
type Preview struct {
	Pos  Pos
	Exec *Exec
	HTTP *HTTP
	File *File
	// Verify runs the preview again just before the call runs: output or
	// arguments that differ from what was approved hold the call for a
	// new decision.
	Verify bool
	// Required refuses an approval while the preview failed or timed
	// out.
	Required bool
	// Timeout bounds the preview; zero: DefaultPreviewTimeout.
	Timeout time.Duration
}

// Limit is how long the preview may run.
func (p *Preview) Limit() time.Duration {
	if p.Timeout > 0 {
		return p.Timeout
	}
	return DefaultPreviewTimeout
}

// Tool is the declaration the preview runs as: the tool's name and input
// schema, the preview's action. A toolkit builds it as it builds any
// declaration.
func (p *Preview) Tool(t *Tool) *Tool {
	return &Tool{Name: t.Name, Pos: p.Pos, Description: "preview of " + t.Name, Input: t.Input,
		Exec: p.Exec, HTTP: p.HTTP, File: p.File, Approvals: 1}
}

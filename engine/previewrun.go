package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/internal/jcs"
	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/toolkits"
)

// PreviewDriftEvent is what a preview-drift event holds: the call, why
// it was held (output or arguments), and the digests approved and found.
type PreviewDriftEvent struct {
	Approved string `json:"approved"` // the digest approved
	CallID   string `json:"callId"`
	Cause    string `json:"cause"` // output or arguments
	Found    string `json:"found"` // the digest of the preview run again
	Tool     string `json:"tool"`
}

func (PreviewDriftEvent) eventType() store.EventType { return EventPreviewDrift }

// previewOf builds the tool a declaration's preview runs as, with the
// toolkit of its action: the same code as any tool of that kind. Nil
// when the declaration has no preview.
func previewOf(kits toolkits.Table, t *spec.Tool) (toolkits.Tool, error) {
	if t.Preview == nil {
		return nil, nil
	}
	pt := t.Preview.Tool(t)
	build, ok := kits[pt.Kind()]
	if !ok {
		return nil, fmt.Errorf("%s: tool %s: preview: no toolkit for %q", pt.Pos, t.Name, pt.Kind())
	}
	kit, err := build(pt)
	if err != nil {
		return nil, err
	}
	tools, err := kit.Tools(context.Background())
	if err != nil || len(tools) != 1 {
		return nil, fmt.Errorf("%s: tool %s: preview: %v (%d tools)", pt.Pos, t.Name, err, len(tools))
	}
	return tools[0], nil
}

// runPreview runs a tool's preview for a call with these arguments
// (valid against its input), bounded by its timeout, and records what it
// showed: the tool's and the preview's secrets cut, capped like any
// result, and the digest an approval binds to.
func (e *Engine) runPreview(ctx context.Context, tn *toolNode, r *store.Run, c *store.Call) *store.Preview {
	p := &store.Preview{Status: store.PreviewOK, ArgsDigest: argsDigest(c.Args)}
	call := toolkits.Call{RunID: r.ID, CallID: c.ID, Tool: c.Tool, Run: runVars(r)}
	names := toolkits.EnvNames(append(tn.tool.Secrets(), tn.preview.Secrets()...))
	call.Env = toolkits.EnvOf(tn.preview.Secrets())
	full := ""
	if err := json.Unmarshal(c.Args, &call.Input); err != nil {
		p.Status, p.Error = store.PreviewFailed, "invalid arguments: "+err.Error()
	} else {
		tctx, cancel := context.WithTimeout(ctx, tn.decl.Preview.Limit())
		done := e.working("preview of " + c.Tool)
		res, err := tn.preview.Do(tctx, call)
		done()
		timedOut := errors.Is(tctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
		cancel()
		full = res.Content
		p.Output = shown(res)
		switch {
		case timedOut:
			p.Status, p.Error = store.PreviewTimedOut, fmt.Sprintf("the preview took longer than its timeout of %s", tn.decl.Preview.Limit())
		case err != nil:
			p.Status, p.Error = store.PreviewFailed, err.Error()
		case res.Failed:
			p.Status, p.Error = store.PreviewFailed, failure(res)
		}
	}
	env := toolkits.EnvOf(names)
	p.Output = cut(redact(p.Output, names, env), e.limits.MaxResult)
	p.Error = redact(p.Error, names, env)
	full = redact(full, names, env)
	p.Digest = previewDigest(c.Args, string(p.Status)+"\n"+full)
	p.At = e.now().UTC().Truncate(1e6)
	return p
}

// shown is the part of a preview's result a human reads: an exec's
// stdout (its stderr after it), an http response's body, else the text.
func shown(res toolkits.Result) string {
	if !res.Object {
		return res.Content
	}
	var o struct {
		Stdout *string `json:"stdout"`
		Stderr string  `json:"stderr"`
		Body   any     `json:"body"`
	}
	if json.Unmarshal([]byte(res.Content), &o) != nil {
		return res.Content
	}
	switch {
	case o.Stdout != nil && o.Stderr != "":
		return *o.Stdout + "\n[stderr]\n" + o.Stderr
	case o.Stdout != nil:
		return *o.Stdout
	case o.Body != nil:
		if s, ok := o.Body.(string); ok {
			return s
		}
		b, _ := json.MarshalIndent(o.Body, "", "  ")
		return string(b)
	}
	return res.Content
}

// failure says why a preview's result is a failure: an exec's exit
// status, an http status.
func failure(res toolkits.Result) string {
	var o struct {
		ExitCode *int   `json:"exitCode"`
		Status   *int   `json:"status"`
		Error    string `json:"error"`
	}
	_ = json.Unmarshal([]byte(res.Content), &o)
	switch {
	case o.Error != "":
		return o.Error
	case o.ExitCode != nil:
		return fmt.Sprintf("exit status %d", *o.ExitCode)
	case o.Status != nil:
		return fmt.Sprintf("HTTP status %d", *o.Status)
	}
	return "the preview reported failure"
}

// canonical is a call's arguments in RFC 8785 canonical JSON (the audit
// chain's form); the text itself when it is not JSON.
func canonical(args json.RawMessage) []byte {
	if b, err := jcs.Canonicalize(args); err == nil {
		return b
	}
	return args
}

// argsDigest is the hex SHA-256 of a call's canonical arguments.
func argsDigest(args json.RawMessage) string {
	sum := sha256.Sum256(canonical(args))
	return hex.EncodeToString(sum[:])
}

// previewDigest binds a call's canonical arguments to what its preview
// showed: sha256: and the hex SHA-256 of both, length-prefixed.
func previewDigest(args json.RawMessage, result string) string {
	a := canonical(args)
	h := sha256.New()
	fmt.Fprintf(h, "%d\n", len(a))
	h.Write(a)
	fmt.Fprintf(h, "\n%d\n", len(result))
	h.Write([]byte(result))
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

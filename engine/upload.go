package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/spec"
)

// Upload is what a server records of a spec uploaded with a run, an
// untrusted one: who sent it and its digest, shown with every call of
// its runs, and the rules its runs keep whichever process advances them.
// It is stored with the spec's snapshot, so a worker keeps them too.
type Upload struct {
	// By is the principal who uploaded the spec (the run's starter).
	By string `json:"by"`
	// Digest is "sha256:" and the hex SHA-256 of the spec's text.
	Digest string `json:"digest"`
	// Every, when set, makes every call of the spec's tools wait for an
	// approver (uploads.requireApproval: always); else only those its
	// own gates name (declared). No grant (approve --always) skips it.
	Every bool `json:"every,omitempty"`
}

// Upload requirements (uploads.requireApproval).
const (
	UploadApproveAlways   = "always"
	UploadApproveDeclared = "declared"
)

// Digest returns the digest of a spec's text, as Upload.Digest says it.
func Digest(text []byte) string {
	sum := sha256.Sum256(text)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// snapshotDoc is a snapshot of an uploaded spec: its sources and the
// upload. A configured or local spec's snapshot is its sources alone (a
// JSON array), as every agentctl before uploads were untrusted wrote.
type snapshotDoc struct {
	Sources []spec.Source `json:"sources"`
	Upload  *Upload       `json:"upload"`
}

// encodeSnapshot returns the snapshot stored with each run of a spec.
func encodeSnapshot(srcs []spec.Source, up *Upload) ([]byte, error) {
	if up == nil {
		return json.Marshal(srcs)
	}
	return json.Marshal(snapshotDoc{Sources: srcs, Upload: up})
}

// decodeSnapshot reads a stored snapshot: an array of sources, or an
// uploaded spec's object.
func decodeSnapshot(snap []byte) ([]spec.Source, *Upload, error) {
	if t := bytes.TrimSpace(snap); len(t) > 0 && t[0] == '{' {
		var d snapshotDoc
		if err := json.Unmarshal(snap, &d); err != nil {
			return nil, nil, fmt.Errorf("spec snapshot: %w", err)
		}
		if d.Upload == nil || d.Upload.By == "" {
			return nil, nil, errors.New("spec snapshot: an uploaded spec's snapshot names no uploader")
		}
		return d.Sources, d.Upload, nil
	}
	var srcs []spec.Source
	if err := json.Unmarshal(snap, &srcs); err != nil {
		return nil, nil, fmt.Errorf("spec snapshot: %w", err)
	}
	return srcs, nil, nil
}

// CompileUpload compiles a spec uploaded with a run: as Compile, and
// its runs keep up's rules (every call of them waits for a human with
// Every; whoever uploaded it never approves them), in this process and
// in every other that advances them.
func (e *Engine) CompileUpload(s *spec.Spec, up Upload) (*Graph, error) {
	if up.By == "" || up.Digest == "" {
		return nil, errors.New("compile an uploaded spec: the upload names no uploader or digest")
	}
	return compileAs(s, e.models, e.kits, &up)
}

// Uploaded returns the upload of run r's spec, and what its call c
// will do (ActionView); nil and nil for a configured spec.
func (e *Engine) Uploaded(ctx context.Context, r *store.Run, c *store.Call) (*Upload, *ActionView, error) {
	g, err := e.graph(ctx, r.SpecHash)
	if err != nil {
		return nil, nil, fmt.Errorf("spec of run %s: %w", r.ID, err)
	}
	if g.upload == nil {
		return nil, nil, nil
	}
	up := *g.upload
	return &up, e.preview(ctx, g, r, c), nil
}

// Package api holds the wire types of agentctl's HTTP API (agentctl serve,
// under /v1), shared by the server and the CLI's client. Runs travel as
// the engine prints them (engine.RunView, engine.RunDetail); this package
// holds the requests, the inbox items, lists and the error object.
//
// The contract is described by the OpenAPI document the server serves at
// /v1/openapi.json; docs/server.md explains it.
package api

import (
	"encoding/json"
	"net/http"
	"time"
)

// Error codes of the error object, each with its HTTP status and the CLI
// exit code it maps to.
const (
	CodeInvalid         = "invalid"         // 400; exit 2: bad input, with JSON pointers in Details
	CodeUnauthenticated = "unauthenticated" // 401; exit 2: no or bad credentials
	CodeForbidden       = "forbidden"       // 403; exit 5: the role or approver policy refuses (audited when it is a decision)
	CodeNotFound        = "not_found"       // 404; exit 2: unknown run or call id
	CodeConflict        = "conflict"        // 409; exit 4: already decided, not suspended, another won
	CodeTooLarge        = "too_large"       // 413; exit 2: a body over the server's limit
	CodeRateLimited     = "rate_limited"    // 429; exit 1: too many requests from this identity
	CodeUnavailable     = "unavailable"     // 503; exit 6: the store cannot be used, or the server is stopping; nothing changed
	CodeOutcomeUnknown  = "outcome_unknown" // 503; exit 8: the database's answer to the commit was lost: read the run, or repeat with the same Idempotency-Key
	CodeKeyReused       = "key_reused"      // 422; exit 2: an Idempotency-Key already used, within a day, for another request
)

// IdempotencyKey is the header of a state-changing request's key: a
// request repeated with the same key (and the same method, path and body)
// within a day is answered as the first was, and changes nothing more.
const IdempotencyKey = "Idempotency-Key"

// Replayed is the header, "true", of an answer to a repeated request
// (IdempotencyKey).
const Replayed = "Idempotent-Replayed"

// CodeOf is the error code of an HTTP status, as the server answers
// each (a gateway's 502 and 504 count as unavailable); "" for a status
// no code has.
func CodeOf(status int) string {
	switch status {
	case http.StatusBadRequest:
		return CodeInvalid
	case http.StatusUnauthorized:
		return CodeUnauthenticated
	case http.StatusForbidden:
		return CodeForbidden
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusConflict:
		return CodeConflict
	case http.StatusRequestEntityTooLarge:
		return CodeTooLarge
	case http.StatusTooManyRequests:
		return CodeRateLimited
	case http.StatusUnprocessableEntity:
		return CodeKeyReused
	case http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
		return CodeUnavailable
	}
	return ""
}

// ErrorBody is the body of every error response: {"error": {...}}.
type ErrorBody struct {
	Error Error `json:"error"`
}

// Error is the one documented error object.
type Error struct {
	Code    string   `json:"code"`
	Message string   `json:"message"`
	Hint    string   `json:"hint,omitempty"`
	Details []Detail `json:"details,omitempty"`
}

// Detail locates one problem of the input: Pointer is a JSON pointer into
// the request body (or into the data or args it carries), Message what is
// wrong there.
type Detail struct {
	Pointer string `json:"pointer,omitempty"`
	Message string `json:"message"`
	// Matches lists the run ids an ambiguous prefix matched.
	Matches []string `json:"matches,omitempty"`
}

// StartRequest is the body of POST /v1/runs.
type StartRequest struct {
	Agent           string `json:"agent"`
	Input           string `json:"input"`
	Model           string `json:"model,omitempty"`
	RequireApproval bool   `json:"requireApproval,omitempty"`
	// Labels label the run (run --label): policy rules read them.
	Labels map[string]string `json:"labels,omitempty"`
	// Spec is YAML text to run instead of the server's specs; only the
	// configuration's authors may send one.
	Spec string `json:"spec,omitempty"`
	// Detach queues the run for the server's workers and answers at once
	// (202), as run --detach.
	Detach bool `json:"detach,omitempty"`
}

// DecisionRequest is the body of POST /v1/runs/{id}/approve, /decline,
// /resume, /retry and /resolve: the CLI's flags, all optional.
type DecisionRequest struct {
	Call   string          `json:"call,omitempty"`
	All    bool            `json:"all,omitempty"`
	Reason string          `json:"reason,omitempty"`
	Args   json.RawMessage `json:"args,omitempty"`   // approve: replace the call's arguments
	Always bool            `json:"always,omitempty"` // approve: also approve the tool's later calls
	As     string          `json:"as,omitempty"`     // decide on behalf of another (delegates only)
	Data   json.RawMessage `json:"data,omitempty"`   // resume: the resume data
	Output string          `json:"output,omitempty"` // resolve: the interrupted call's result
	Failed bool            `json:"failed,omitempty"` // resolve: record it as a failure
	Detach bool            `json:"detach,omitempty"` // record only; a worker advances the run
	// PreviewDigest, for an approval, is the digest of the preview the
	// approver saw: when the call's preview is another now, nothing is
	// decided (409 conflict).
	PreviewDigest string `json:"previewDigest,omitempty"`
}

// SendRequest is the body of POST /v1/runs/{id}/send.
type SendRequest struct {
	Text string `json:"text"`
	As   string `json:"as,omitempty"`
}

// List is a page of a list: Next, when set, is the cursor of the next
// page (?cursor=).
type List[T any] struct {
	Items []T    `json:"items"`
	Next  string `json:"next,omitempty"`
}

// Approval is one call waiting for a human, in the inbox (GET
// /v1/approvals).
type Approval struct {
	RunID           string          `json:"runId"`
	RootID          string          `json:"rootId"`
	CallID          string          `json:"callId"`
	Agent           string          `json:"agent"`
	Path            []string        `json:"path"`
	Tool            string          `json:"tool"`
	Args            json.RawMessage `json:"args"`
	Kind            string          `json:"kind"` // approval, suspend or interrupted
	Gate            json.RawMessage `json:"gate,omitempty"`
	GateError       string          `json:"gateError,omitempty"`
	Preview         json.RawMessage `json:"preview,omitempty"`      // what the tool's preview showed (docs/previews.md)
	PreviewDrift    json.RawMessage `json:"previewDrift,omitempty"` // the preview approved before, contradicted just before execution
	Payload         json.RawMessage `json:"payload,omitempty"`
	ResumeSchema    json.RawMessage `json:"resumeSchema,omitempty"`
	Approvers       []string        `json:"approvers"`               // who may decide: users and group:NAME; empty: the server's approvers role
	AlsoApprovers   [][]string      `json:"alsoApprovers,omitempty"` // further lists (a supervisor's gate): whoever decides is named in Approvers and in each
	NotBy           string          `json:"notBy,omitempty"`         // the run's starter under separateDuties: may decline, not approve, resume or retry
	RequireReason   bool            `json:"requireReason,omitempty"` // the tool's requireReason: every decision gives a reason
	ApprovalsNeeded int             `json:"approvalsNeeded"`
	ApprovalsGiven  int             `json:"approvalsGiven"`
	Deadline        *time.Time      `json:"deadline,omitempty"`
	CreatedAt       time.Time       `json:"createdAt"`
	// Upload says who uploaded the run's spec, and its digest; absent
	// for a configured spec.
	Upload *Upload `json:"upload,omitempty"`
	// Action is what the call will do (engine.ActionView), for a call
	// of an uploaded spec.
	Action json.RawMessage `json:"action,omitempty"`
	// Escalation is the call's escalation ladder, each step with when it
	// is due and when it happened (engine.EscalationView); absent when
	// it has none.
	Escalation json.RawMessage `json:"escalation,omitempty"`
}

// Upload is who uploaded a run's spec to the server, and the spec's
// digest: such a spec is untrusted (docs/server.md, "Uploaded specs").
type Upload struct {
	By     string `json:"by"`
	Digest string `json:"digest"` // sha256: and the hex SHA-256 of its text
	// Every: every call of its tools waits for an approver.
	Every bool `json:"every,omitempty"`
}

// Token is a token's record as token list prints it; the secret is never
// shown again after token create.
type Token struct {
	ID        string     `json:"id"`
	User      string     `json:"user"`
	Groups    []string   `json:"groups"`
	CreatedAt time.Time  `json:"createdAt"`
	CreatedBy string     `json:"createdBy"`
	ExpiresAt time.Time  `json:"expiresAt"`
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
}

// Whoami is GET /v1/whoami: the caller as the server authenticated it.
type Whoami struct {
	User   string   `json:"user"`
	Groups []string `json:"groups"`
	Via    string   `json:"via"` // socket, token or proxy
	Roles  []string `json:"roles"`
}

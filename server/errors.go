package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/spec"
)

// CodeInternal is the code of an error the server did not foresee (500).
const CodeInternal = "internal"

// status is the HTTP status of each error code.
var status = map[string]int{
	api.CodeInvalid:         http.StatusBadRequest,
	api.CodeUnauthenticated: http.StatusUnauthorized,
	api.CodeForbidden:       http.StatusForbidden,
	api.CodeNotFound:        http.StatusNotFound,
	api.CodeConflict:        http.StatusConflict,
	api.CodeTooLarge:        http.StatusRequestEntityTooLarge,
	api.CodeRateLimited:     http.StatusTooManyRequests,
	api.CodeUnavailable:     http.StatusServiceUnavailable,
	api.CodeOutcomeUnknown:  http.StatusServiceUnavailable,
	api.CodeKeyReused:       http.StatusUnprocessableEntity,
	CodeInternal:            http.StatusInternalServerError,
}

// apiError is an error answered with a code of its own.
type apiError struct {
	body   api.Error
	status int // 0: the code's
}

func (e *apiError) Error() string { return e.body.Message }

// invalid is a 400 with details.
func invalid(msg string, details ...api.Detail) *apiError {
	return &apiError{body: api.Error{Code: api.CodeInvalid, Message: msg, Details: details}}
}

// forbidden is a 403 the server itself decides (a role).
func forbidden(format string, args ...any) *apiError {
	return &apiError{body: api.Error{Code: api.CodeForbidden, Message: fmt.Sprintf(format, args...)}}
}

// errorBody classifies err as the API reports it. Errors the server did
// not foresee are reported without their text, which is logged instead.
func errorBody(err error) (int, api.Error, bool) {
	var (
		ae    *apiError
		auth  *authError
		se    spec.Errors
		amb   *store.AmbiguousError
		in    *engine.InputError
		mbe   *http.MaxBytesError
		unk   *engine.UnknownError
		intr  *engine.InterruptedError
		known = true
	)
	e := api.Error{Message: err.Error()}
	switch {
	case errors.As(err, &ae):
		e = ae.body
		if ae.status != 0 {
			return ae.status, e, true
		}
	case errors.Is(err, ErrNameRefused):
		e.Code, e.Hint = api.CodeForbidden, "docs/server.md#names says which names the server takes"
	case errors.As(err, &auth):
		e.Code, e.Hint = api.CodeUnauthenticated, auth.hint
	case errors.As(err, &mbe):
		e.Code, e.Message = api.CodeTooLarge, fmt.Sprintf("the request body is over the server's limit of %d bytes", mbe.Limit)
	case errors.As(err, &se):
		e.Code, e.Message = api.CodeInvalid, fmt.Sprintf("spec is invalid (%d %s)", len(se), plural(len(se), "error", "errors"))
		for _, x := range se {
			e.Details = append(e.Details, api.Detail{Pointer: "/spec", Message: x.Error()})
		}
	case errors.As(err, &amb):
		e.Code, e.Hint = api.CodeInvalid, "use a longer prefix"
		e.Details = []api.Detail{{Message: "the prefix matches several runs", Matches: amb.Matches}}
	case errors.As(err, &in):
		e.Code = api.CodeInvalid
		if in.Violations != nil { // each is a detail: the message does not repeat them
			// As the CLI says it (phraseInput), whichever way it came.
			e.Message = fmt.Sprintf("args for call %s (%s) break its input schema", in.CallID, in.Tool)
			if in.Field == engine.InputData {
				e.Message = fmt.Sprintf("resume data for call %s (%s) breaks its resumeSchema", in.CallID, in.Tool)
			}
		}
		for _, v := range in.Violations {
			e.Details = append(e.Details, api.Detail{Pointer: "/" + in.Field + strings.TrimSuffix(v.Pointer, "/"), Message: v.Message})
		}
		if in.Violations == nil {
			e.Details = []api.Detail{{Pointer: "/" + in.Field, Message: errText(in.Err, in.Problem)}}
		}
	case errors.As(err, &unk):
		e.Code = api.CodeInvalid
		e.Details = []api.Detail{{Pointer: "/" + unk.What, Message: unk.Error()}}
	case errors.As(err, &intr):
		e.Code, e.Message, e.Hint = api.CodeUnavailable, "the server is stopping: "+err.Error(), "the run is checkpointed; it goes on when a server or worker takes it"
	case errors.Is(err, store.ErrBadCursor):
		e.Code, e.Hint = api.CodeInvalid, "pass a cursor this server returned as next, or none for the first page"
		e.Details = []api.Detail{{Pointer: "/cursor", Message: "bad cursor"}}
	case errors.Is(err, store.ErrOutcomeUnknown):
		e.Code, e.Message = api.CodeOutcomeUnknown, "the change may or may not have been made: "+err.Error()
		e.Hint = "read the run before deciding again, or repeat the request with the same Idempotency-Key: it is answered as the first was"
	case errors.Is(err, store.ErrUnavailable):
		e.Code = api.CodeUnavailable
		e.Hint = "nothing was changed; try again shortly"
	case errors.Is(err, store.ErrForbidden):
		e.Code = api.CodeForbidden
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrLeaseLost):
		e.Code = api.CodeConflict
	case errors.Is(err, store.ErrNotFound):
		e.Code = api.CodeNotFound
	case errors.Is(err, engine.ErrUsage):
		e.Code = api.CodeInvalid
	default:
		e.Code, e.Message, known = CodeInternal, "internal error (see the server's log)", false
	}
	return status[e.Code], e, known
}

// errText is what an input error says.
func errText(err error, problem string) string {
	if err == nil {
		return problem
	}
	return problem + ": " + err.Error()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// writeError answers with the error object.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if c, ok := s.store.(interface{ Classify(error) error }); ok {
		err = c.Classify(err) // a driver's failure, in the store's words
	}
	code, e, known := errorBody(err)
	if !known {
		s.log.Error("request failed", "id", requestID(r), "err", err.Error())
	}
	if code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="agentctl"`)
	}
	if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, code, api.ErrorBody{Error: e})
}

// writeJSON answers with a JSON body.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

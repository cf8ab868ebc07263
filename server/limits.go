package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"

	"golang.org/x/time/rate"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/textcheck"
	"github.com/agentctl/agentctl/spec"
)

// limiters hold a token bucket per identity.
type limiters struct {
	mu    sync.Mutex
	rate  rate.Limit
	burst int
	by    map[string]*rate.Limiter
}

func newLimiters(c RateConfig) *limiters {
	l := &limiters{rate: rate.Limit(c.PerSecond), burst: c.Burst, by: map[string]*rate.Limiter{}}
	if l.rate == 0 {
		l.rate = DefaultRate
	}
	if l.burst == 0 {
		l.burst = DefaultBurst
	}
	return l
}

// allow takes a token from p's bucket.
func (l *limiters) allow(p *Principal) bool { return l.bucket(p.Via + "\x00" + p.Name).Allow() }

// spent reports whether a bucket has no token left, taking none.
func (l *limiters) spent(key string) bool { return l.bucket(key).Tokens() < 1 }

// bucket returns the bucket of key, made on first use.
func (l *limiters) bucket(key string) *rate.Limiter {
	l.mu.Lock()
	lim := l.by[key]
	if lim == nil {
		lim = rate.NewLimiter(l.rate, l.burst)
		l.by[key] = lim
	}
	l.mu.Unlock()
	return lim
}

// failedKey is the bucket of failed authentications from where r comes
// from: its address, or a socket peer's uid.
func failedKey(r *http.Request) string {
	if p := peerFrom(r); p != nil {
		return fmt.Sprintf("failed\x00uid:%d", p.uid)
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "failed\x00" + host
}

// errRateLimited answers a request over its identity's rate.
var errRateLimited = &apiError{body: api.Error{Code: api.CodeRateLimited, Message: "too many requests from this identity", Hint: "retry after a second"}}

// decode reads a JSON request body into v, refusing unknown fields,
// trailing data, text that is not UTF-8 (textcheck) and a body over the
// limit. An empty body is an empty
// object.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return invalid(fmt.Sprintf("read the request body: %v", err))
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	// The body is read as JSON whatever its Content-Type says (curl -d
	// says a form); a change authenticated by the proxy's header must
	// say JSON (admit).
	if e := textcheck.JSON(body); e != nil {
		return invalid("invalid request body", api.Detail{Pointer: e.Pointer, Message: e.Error() + "; JSON text is UTF-8"})
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return invalid("the request body holds more than one JSON value")
	}
	return nil
}

// jsonKind names what JSON a Go type decodes from: an object, a
// string, ... (never a Go type's name).
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 { // json.RawMessage: any JSON
			return "a JSON value"
		}
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return t.Kind().String()
}

// jsonError turns a decoding error into a 400 with a JSON pointer.
func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		ptr := "/" + strings.ReplaceAll(te.Field, ".", "/")
		return invalid("invalid request body", api.Detail{Pointer: ptr, Message: fmt.Sprintf("want %s, not %s", jsonKind(te.Type), te.Value)})
	case errors.As(err, &se):
		return invalid("invalid request body", api.Detail{Message: fmt.Sprintf("not JSON at byte %d: %v", se.Offset, se)})
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return invalid("invalid request body", api.Detail{Pointer: "/" + name, Message: fmt.Sprintf("unknown field %q", name)})
	}
	return invalid("invalid request body", api.Detail{Message: err.Error()})
}

// field is one text of a request, for the size check.
type field struct {
	name string
	size int
}

// checkSizes refuses a request whose texts are over limits.maxInput, or
// whose spec is over the spec file limit: 413, naming the field.
func (s *Server) checkSizes(specSize int, fields ...field) error {
	var details []api.Detail
	for _, f := range fields {
		if int64(f.size) > s.cfg.maxInput {
			details = append(details, api.Detail{Pointer: "/" + f.name, Message: fmt.Sprintf("%d bytes, over the limit of %d", f.size, s.cfg.maxInput)})
		}
	}
	if int64(specSize) > spec.DefaultMaxFile {
		details = append(details, api.Detail{Pointer: "/spec", Message: fmt.Sprintf("%d bytes, over the limit of %d", specSize, spec.DefaultMaxFile)})
	}
	if details == nil {
		return nil
	}
	return &apiError{body: api.Error{Code: api.CodeTooLarge, Message: "the request is over the server's limits", Details: details}}
}

package server

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/token"
)

// reqInfo is what the request log says of a request, filled in as it is
// served.
type reqInfo struct {
	id        string
	route     string // the route's pattern, not the raw path
	principal *Principal
}

type infoKey struct{}

// infoOf returns the request's log record (a blank one outside logged).
func infoOf(r *http.Request) *reqInfo {
	if i, ok := r.Context().Value(infoKey{}).(*reqInfo); ok {
		return i
	}
	return &reqInfo{}
}

// requestID returns the request's id.
func requestID(r *http.Request) string { return infoOf(r).id }

// saneID is a request id a client may choose.
var saneID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`) })

// recorder notes the status a handler wrote.
type recorder struct {
	http.ResponseWriter
	code int
}

func (w *recorder) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush lets event streams flush through the recorder.
func (w *recorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack is the underlying writer's, if it has one.
func (w *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if h, ok := w.ResponseWriter.(http.Hijacker); ok {
		return h.Hijack()
	}
	return nil, nil, errors.New("hijack: not supported")
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// logged gives each request an id (a sane X-Request-Id, else a new one,
// echoed back), then logs one JSON line for it: never its headers, its
// token or its body.
func (s *Server) logged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &reqInfo{id: r.Header.Get("X-Request-Id")}
		// An id that may hold a token (pasted by mistake, in any case or
		// with any separator) is never logged.
		if !saneID().MatchString(info.id) || strings.Contains(strings.ToLower(info.id), strings.TrimSuffix(token.Prefix, "_")) {
			var b [8]byte
			rand.Read(b[:])
			info.id = hex.EncodeToString(b[:])
		}
		w.Header().Set("X-Request-Id", info.id)
		rec := &recorder{ResponseWriter: w}
		r = r.WithContext(context.WithValue(r.Context(), infoKey{}, info))
		next.ServeHTTP(rec, r)
		if rec.code == 0 {
			rec.code = http.StatusOK
		}
		d := time.Since(start)
		route := info.route
		if route == "" {
			route = "unmatched"
		}
		attrs := []any{"id", info.id, "method", r.Method, "route", route, "status", rec.code, "seconds", d.Round(time.Microsecond).Seconds()}
		if p := info.principal; p != nil {
			attrs = append(attrs, "principal", p.Name, "via", p.Via)
		}
		s.log.Info("request", attrs...)
		if s.opts.ObserveHTTP != nil {
			s.opts.ObserveHTTP(route, rec.code, d)
		}
	})
}

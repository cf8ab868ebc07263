package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/engine/store"
)

// Idempotency keys (api.IdempotencyKey). A client that sends a change
// and gets no answer (the connection broke, a gateway timed out, the
// server answered outcome_unknown) cannot tell whether it took effect.
// With a key, it repeats the request: the store records the key in the
// change's own transaction, so a repeat either finds it (and is
// answered as the first would be now: the run as it is) or finds
// nothing, and makes the change. A key is the client's, hashed with its
// principal's name: one client's key tells nothing of another's.

// maxKey bounds a key's length.
const maxKey = 255

type requestKey struct{}

// requestOf is the idempotency record of the request ctx serves, nil
// when it has no key.
func requestOf(ctx context.Context) *store.Request {
	req, _ := ctx.Value(requestKey{}).(*store.Request)
	return req
}

// idempotent serves h with the request's key, if any: a repeat of a
// request already recorded is answered from the run as it is now
// (status ok, or 202 while it runs) with the header Idempotent-Replayed;
// the same key with another request is 422.
func (s *Server) idempotent(ok int, h handler) handler {
	return func(w http.ResponseWriter, r *http.Request, p *Principal) error {
		keys := r.Header.Values(api.IdempotencyKey)
		if len(keys) == 0 {
			return h(w, r, p)
		}
		if len(keys) > 1 {
			return invalid("bad Idempotency-Key header", api.Detail{Message: "sent more than once: send one key"})
		}
		key := keys[0]
		if err := checkKey(key); err != nil {
			return err
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.maxBody))
		if err != nil {
			return err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		req := &store.Request{Key: digest(p.Name, key), Hash: digest(r.Method, r.URL.Path, string(body))}
		if done, err := s.replay(w, r, req, ok, false); done || err != nil {
			return err
		}
		err = h(w, r.WithContext(context.WithValue(r.Context(), requestKey{}, req)), p)
		if err != nil && (errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrOutcomeUnknown)) {
			// Another request with the key won a race, or this one's
			// outcome is unknown: what is on record says.
			if done, rerr := s.replay(w, r, req, ok, true); done {
				return rerr
			}
		}
		return err
	}
}

// replay answers a request whose key is on record; done is false when
// it is not, or, after the request failed (after), when the record
// cannot be read: the request's own error is the answer then.
func (s *Server) replay(w http.ResponseWriter, r *http.Request, req *store.Request, ok int, after bool) (done bool, err error) {
	prior, err := s.store.Requested(r.Context(), req.Key)
	switch {
	case errors.Is(err, store.ErrNotFound), err != nil && after:
		return false, nil
	case err != nil:
		return true, err
	case prior.Hash != req.Hash:
		return true, &apiError{body: api.Error{Code: api.CodeKeyReused,
			Message: "this Idempotency-Key was used for another request at " + prior.At.UTC().Format("2006-01-02T15:04:05Z"),
			Hint:    "use a new key for each change; repeat a key only to repeat the same request"}}
	}
	w.Header().Set(api.Replayed, "true")
	return true, s.answer(w, r, prior.RunID, true, ok)
}

// checkKey refuses a key that is empty, long, or holds other than
// printable ASCII (a space included).
func checkKey(key string) error {
	bad := key == "" || len(key) > maxKey
	for i := 0; i < len(key) && !bad; i++ {
		bad = key[i] < 0x21 || key[i] > 0x7e
	}
	if bad {
		return invalid("bad Idempotency-Key header", api.Detail{Message: "want 1 to 255 printable ASCII characters, no space, such as a UUID"})
	}
	return nil
}

// digest is a hash of parts, each told apart from the next.
func digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

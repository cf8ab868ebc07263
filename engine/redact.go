package engine

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
)

// Shortest values redact cuts: a shorter value would cut ordinary text
// out of results. Encoded forms that are not text escapes (base64, hex)
// are cut only for longer values, whose forms cannot occur by chance.
const (
	minSecret        = 4
	minEncodedSecret = 8
)

// redact cuts the values of the named environment variables out of a
// tool's result, so that a secret the tool echoes is never stored: as it
// is, and in the encodings a result commonly carries it in (JSON string
// escapes, with or without HTML escaping; URL query and path escaping;
// base64, standard and URL-safe, padded or not, also inside a longer
// encoded text; hex, lower and upper case).
func redact(s string, names []string, env map[string]string) string {
	for _, n := range names {
		if v := env[n]; len(v) >= minSecret {
			for _, form := range encodings(v) {
				s = strings.ReplaceAll(s, form, "[env."+n+"]")
			}
		}
	}
	return s
}

// encodings returns v and the distinct forms it takes when encoded,
// longest first within each kind, so that a whole form is cut before a
// part of it.
func encodings(v string) []string {
	out := []string{v}
	add := func(f string) {
		if f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	for _, html := range []bool{true, false} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		if enc.Encode(v) == nil {
			add(strings.TrimSuffix(strings.TrimPrefix(b.String(), `"`), "\"\n"))
		}
	}
	add(url.QueryEscape(v))
	add(url.PathEscape(v))
	if len(v) < minEncodedSecret {
		return out
	}
	add(hex.EncodeToString([]byte(v)))
	add(strings.ToUpper(hex.EncodeToString([]byte(v))))
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		add(enc.EncodeToString([]byte(v)))
		add(enc.WithPadding(base64.NoPadding).EncodeToString([]byte(v)))
		for k := range 3 {
			add(base64Core(enc, v, k))
		}
	}
	return out
}

// base64Core returns the characters of v's base64 form that depend on v
// alone when v starts k bytes into a 3-byte group of a longer encoded
// text: the one character at each edge shared with its neighbours is
// left out (it carries at most 4 bits of v).
func base64Core(enc *base64.Encoding, v string, k int) string {
	s := enc.EncodeToString(append(make([]byte, k), v...))
	from, to := (8*k+5)/6, (8*k+8*len(v))/6
	return s[from:to]
}

// Package redact cuts the values of secrets (environment variables a tool
// or model reads) out of text, as they are and in the encodings text
// commonly carries them in, so that a secret a tool echoes never reaches
// the database, events or output. The engine cuts every result with it;
// toolkits that truncate output cut it first, so that a secret straddling
// the cut leaves no prefix behind.
package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"html"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Shortest values cut: a shorter value would cut ordinary text out of
// results. Encoded forms that are not text escapes (base64, hex) are cut
// only for longer values, whose forms cannot occur by chance.
const (
	MinSecret        = 4
	MinEncodedSecret = 8
)

// Redactor cuts a set of secrets out of text. The zero value and nil cut
// nothing.
type Redactor struct {
	secrets []secret
	slack   int
}

// secret is one value to cut, with its forms: exact ones searched in the
// text as it is, base64 ones in the text without line breaks, its hex
// form in that text lower-cased.
type secret struct {
	mark, value string
	exact       []string
	base64      []string
	hex         string
}

// New returns the Redactor for the values of the named variables in env;
// names without a value, or with one shorter than MinSecret, are skipped.
func New(names []string, env map[string]string) *Redactor {
	r := &Redactor{}
	for _, n := range slices.Compact(slices.Sorted(slices.Values(names))) {
		v := env[n]
		if len(v) < MinSecret {
			continue
		}
		s := secret{mark: "[env." + n + "]", value: v, exact: exactForms(v)}
		if len(v) >= MinEncodedSecret {
			s.base64, s.hex = base64Forms(v), hex.EncodeToString([]byte(v))
		}
		r.secrets = append(r.secrets, s)
		r.slack = max(r.slack, maxFormLen(v))
	}
	return r
}

// String returns s with the values of the named variables in env cut.
func String(s string, names []string, env map[string]string) string {
	return New(names, env).Cut(s)
}

// Slack returns how many bytes past a cut a caller that truncates text
// must keep for Prefix: at least the longest form of any of its secrets.
func (r *Redactor) Slack() int {
	if r == nil {
		return 0
	}
	return r.slack
}

// Cut returns s with every form of every secret replaced by [env.NAME].
func (r *Redactor) Cut(s string) string {
	out, _ := r.Prefix(s, len(s))
	return out
}

// Prefix returns the first n bytes of s with the secrets cut: a form
// that starts before n is cut whole even where it runs past n, so a
// secret straddling the cut leaves nothing behind, provided s holds at
// least Slack bytes past n (or ends). It reports whether anything of s
// was left out.
func (r *Redactor) Prefix(s string, n int) (string, bool) {
	n = min(n, len(s))
	var b strings.Builder
	at := 0
	for _, sp := range r.spans(s) {
		if sp.from >= n {
			break
		}
		b.WriteString(s[at:sp.from])
		b.WriteString(sp.mark)
		at = sp.to
	}
	if at < n {
		b.WriteString(s[at:n])
	}
	return b.String(), max(at, n) < len(s)
}

// span is a stretch of text that holds a secret.
type span struct {
	from, to int
	mark     string
}

// spans returns where the secrets stand in s, sorted and merged: where
// forms overlap, the union is cut, marked by the first. A secret is
// searched in its exact forms in s, as it is in s with its text escapes
// undone, and in its base64 and hex forms in s without line breaks.
func (r *Redactor) spans(s string) []span {
	if r == nil || len(r.secrets) == 0 {
		return nil
	}
	raw, text := view{text: s}, decoded(s)
	var lines, lower view
	var all []span
	for _, sec := range r.secrets {
		if sec.base64 != nil && lower.text == "" {
			lines = unwrapped(s)
			lower = view{asciiLower(lines.text), lines.from, lines.to}
		}
		all = find(all, raw, sec.exact, sec.mark)
		all = find(all, text, []string{sec.value}, sec.mark)
		if sec.base64 != nil {
			all = find(all, lines, sec.base64, sec.mark)
			all = find(all, lower, []string{sec.hex}, sec.mark)
		}
	}
	slices.SortFunc(all, func(a, b span) int {
		if a.from != b.from {
			return a.from - b.from
		}
		return b.to - a.to
	})
	var out []span
	for _, sp := range all {
		if k := len(out) - 1; k >= 0 && sp.from < out[k].to {
			out[k].to = max(out[k].to, sp.to)
			continue
		}
		out = append(out, sp)
	}
	return out
}

// find appends to spans where the forms stand in v, in the text v is a
// rendition of.
func find(spans []span, v view, forms []string, mark string) []span {
	for _, f := range forms {
		for at := 0; ; {
			i := strings.Index(v.text[at:], f)
			if i < 0 {
				break
			}
			from, to := v.span(at+i, at+i+len(f))
			spans = append(spans, span{from, to, mark})
			at += i + len(f)
		}
	}
	return spans
}

// maxFormLen bounds the length of a form of v: up to eight characters
// (\\\u00XX) per byte for text escapes, two per byte of hex each
// followed by a line break when it is broken into short lines.
func maxFormLen(v string) int {
	return 16*len(v) + 16
}

// exactForms returns v and the distinct forms it takes when encoded as Go
// writes them: JSON with and without HTML escaping, URL query (a space
// as +) and path escaping, and HTML escaping (Go's, text-only, and the
// &quot;/&#x27; form other libraries write).
func exactForms(v string) []string {
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
	add(html.EscapeString(v))                                                   // &amp; &lt; &gt; &#39; &#34;
	add(strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(v)) // text, not attributes
	add(strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#x27;").Replace(v))
	return out
}

// base64Forms returns v's base64 forms, standard and URL-safe: padded,
// unpadded, and the cores that hold v where it starts at any offset into
// a 3-byte group of a longer encoded text; whole forms first.
func base64Forms(v string) []string {
	var out []string
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		out = append(out, enc.EncodeToString([]byte(v)), enc.WithPadding(base64.NoPadding).EncodeToString([]byte(v)))
		for k := range 3 {
			out = append(out, base64Core(enc, v, k))
		}
	}
	return slices.Compact(out)
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

// view is a rendition of a text in which secrets are searched, each of
// its bytes standing for the bytes from[k]:to[k] of the text; nil from
// means the text itself.
type view struct {
	text     string
	from, to []int32
}

// span returns where the bytes a:b of the view stand in the text.
func (v view) span(a, b int) (int, int) {
	if v.from == nil {
		return a, b
	}
	return int(v.from[a]), int(v.to[b-1])
}

// builder writes a view.
type builder struct {
	b        strings.Builder
	from, to []int32
}

// newBuilder returns a builder for a view of a text of n bytes.
func newBuilder(n int) *builder {
	w := &builder{from: make([]int32, 0, n), to: make([]int32, 0, n)}
	w.b.Grow(n)
	return w
}

// add writes p, which stands for the bytes from:to of the text.
func (w *builder) add(p string, from, to int) {
	w.b.WriteString(p)
	for range len(p) {
		w.from, w.to = append(w.from, int32(from)), append(w.to, int32(to))
	}
}

// copy writes p, the bytes of the text from at on, as they are.
func (w *builder) copy(p string, at int) {
	w.b.WriteString(p)
	for i := range len(p) {
		w.from, w.to = append(w.from, int32(at+i)), append(w.to, int32(at+i+1))
	}
}

func (w *builder) view() view { return view{w.b.String(), w.from, w.to} }

// decoded returns s with its text escapes undone: JSON escapes (\u00e4 in
// either case, surrogate pairs, \/, \", \\, \n ...), their backslash
// itself escaped up to twice (JSON inside JSON, as a tool's JSON output
// stands in an exec result), percent-encoding in either case, and HTML
// character references (&#43;, &#x2B;, &amp; &lt; &gt; &quot; &apos;).
// Text without a backslash, % or & is its own view.
func decoded(s string) view {
	if !strings.ContainsAny(s, `\%&`) {
		return view{text: s}
	}
	w := newBuilder(len(s))
	for i := 0; i < len(s); {
		if j := strings.IndexAny(s[i:], `\%&`); j != 0 {
			if j < 0 {
				j = len(s) - i
			}
			w.copy(s[i:i+j], i)
			i += j
			continue
		}
		p, n := unescape(s[i:])
		w.add(p, i, i+n)
		i += n
	}
	return w.view()
}

// unescape decodes the escape s starts with, if any: what it stands for
// and how many bytes it takes; otherwise s's first byte.
func unescape(s string) (string, int) {
	if s[0] == '&' {
		return htmlRef(s)
	}
	if s[0] == '%' && len(s) >= 3 && isHex(s[1:3]) {
		b, _ := hex.DecodeString(s[1:3])
		return string(b), 3
	}
	if s[0] != '\\' {
		return s[:1], 1
	}
	k := 1
	for k < 3 && k < len(s) && s[k] == '\\' {
		k++
	}
	if k >= len(s) {
		return s[:1], 1
	}
	if c, ok := jsonShort[s[k]]; ok {
		return string(c), k + 1
	}
	if s[k] != 'u' || len(s) < k+5 || !isHex(s[k+1:k+5]) {
		if k >= 2 {
			return `\`, 2
		}
		return s[:1], 1
	}
	u, _ := strconv.ParseUint(s[k+1:k+5], 16, 32)
	r, n := rune(u), k+5
	if utf16.IsSurrogate(r) {
		lo, m := lowSurrogate(s[n:])
		if r = utf16.DecodeRune(r, lo); m == 0 || r == utf8.RuneError {
			return s[:n], n
		}
		n += m
	}
	return string(r), n
}

// htmlNamed are the named character references HTML escapers write.
var htmlNamed = map[string]string{"amp": "&", "lt": "<", "gt": ">", "quot": `"`, "apos": "'"}

// htmlRef decodes the HTML character reference s starts with (&#43;,
// &#x2b;, &amp;): what it stands for and its length; otherwise "&", 1.
func htmlRef(s string) (string, int) {
	end := strings.IndexByte(s[:min(len(s), 12)], ';')
	if end < 2 {
		return s[:1], 1
	}
	body := s[1:end]
	if v, ok := htmlNamed[body]; ok {
		return v, end + 1
	}
	if body[0] != '#' || len(body) < 2 {
		return s[:1], 1
	}
	digits, base := body[1:], 10
	if digits[0] == 'x' || digits[0] == 'X' {
		digits, base = digits[1:], 16
	}
	u, err := strconv.ParseUint(digits, base, 32)
	if err != nil || digits == "" || !utf8.ValidRune(rune(u)) {
		return s[:1], 1
	}
	return string(rune(u)), end + 1
}

// lowSurrogate reads the \u escape of a low surrogate s starts with: its
// value and length, or 0 and 0.
func lowSurrogate(s string) (rune, int) {
	k := 0
	for k < 3 && k < len(s) && s[k] == '\\' {
		k++
	}
	if k == 0 || len(s) < k+5 || s[k] != 'u' || !isHex(s[k+1:k+5]) {
		return 0, 0
	}
	u, _ := strconv.ParseUint(s[k+1:k+5], 16, 32)
	return rune(u), k + 5
}

// jsonShort maps the character after a backslash in a two-character JSON
// escape to what it stands for.
var jsonShort = map[byte]byte{'"': '"', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// isHex reports whether s is hex digits, either case.
func isHex(s string) bool {
	for i := range len(s) {
		if c := s[i] | 0x20; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// unwrapped returns s without line breaks, raw (\n, \r\n) or escaped
// (\n, \r\n, their backslash escaped up to twice), and with \/ read as
// /, so that a base64 or hex form a wrapping encoder (base64, xxd -p)
// broke into lines reads whole. Text without a line break or backslash
// is its own view.
func unwrapped(s string) view {
	if !strings.ContainsAny(s, "\n\\") {
		return view{text: s}
	}
	w := newBuilder(len(s))
	for i := 0; i < len(s); {
		if j := strings.IndexAny(s[i:], "\r\n\\"); j != 0 {
			if j < 0 {
				j = len(s) - i
			}
			w.copy(s[i:i+j], i)
			i += j
			continue
		}
		n := lineBreak(s[i:])
		if n > 0 {
			i += n
			continue
		}
		n = 1
		p := s[i : i+1]
		if k := backslashes(s[i:]); k > 0 && i+k < len(s) && s[i+k] == '/' {
			p, n = "/", k+1
		}
		w.add(p, i, i+n)
		i += n
	}
	return w.view()
}

// lineBreak returns the length of the line break s starts with, or 0.
func lineBreak(s string) int {
	switch {
	case strings.HasPrefix(s, "\n"):
		return 1
	case strings.HasPrefix(s, "\r\n"):
		return 2
	}
	k := backslashes(s)
	if k > 0 && k < len(s) && s[k] == 'r' {
		if m := backslashes(s[k+1:]); m > 0 && k+1+m < len(s) && s[k+1+m] == 'n' {
			return k + m + 2
		}
	}
	if k > 0 && k < len(s) && s[k] == 'n' {
		return k + 1
	}
	return 0
}

// backslashes returns how many (up to 3) backslashes s starts with.
func backslashes(s string) int {
	k := 0
	for k < 3 && k < len(s) && s[k] == '\\' {
		k++
	}
	return k
}

// asciiLower lower-cases ASCII letters only, keeping every byte where it
// is (a hex form in either case reads in lower case).
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

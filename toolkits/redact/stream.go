package redact

import "strings"

// Stream cuts secrets out of a text that arrives in pieces, such as a
// model's answer as it streams. Next returns what of the text so far can
// be shown, every secret cut, and holds back the shortest tail that could
// still grow into a form of a secret: a secret split across pieces never
// shows in part. What Next and End return, joined, is Cut of the whole
// text. A nil Redactor's Stream holds nothing back and cuts nothing.
type Stream struct {
	r    *Redactor
	text string // the text from the last point nothing before matters (see Next)
	at   int    // how much of text was returned (or cut)
}

// Stream returns a Stream that cuts r's secrets.
func (r *Redactor) Stream() *Stream { return &Stream{r: r} }

// Next adds piece to the text and returns what can be shown of it now.
func (s *Stream) Next(piece string) string {
	if s.r == nil || len(s.r.secrets) == 0 {
		return piece
	}
	s.text += piece
	clean, hold := s.r.open(s.text)
	out := s.emit(s.text[:clean], hold)
	if hold == clean || !strings.ContainsAny(s.text[max(0, hold-16):hold], "\\%\r&") {
		// Nothing before hold can matter any more: every form of a
		// secret that starts before it was cut or shown whole, and no
		// escape or line break the renditions read straddles it (clean
		// is where the last one that may still grow starts, see
		// partialTail; one that straddles hold starts at most 16 bytes
		// before it, with a backslash, % or CR), so the renditions of
		// the rest read as those of the whole text do. The text kept,
		// and each piece's work, stay short.
		s.text, s.at = s.text[hold:], s.at-hold
	}
	return out
}

// End returns the rest of the text, the tail held back included, with
// the secrets cut: the text is complete.
func (s *Stream) End() string { return s.emit(s.text, len(s.text)) }

// emit returns text from s.at up to n with the secrets cut: a form that
// starts before n is cut whole, and the rest of one cut before is left
// out.
func (s *Stream) emit(text string, n int) string {
	var b strings.Builder
	at := s.at
	for _, sp := range s.r.spans(text) {
		if sp.from >= n {
			break
		}
		if sp.to <= at {
			continue
		}
		if sp.from >= at {
			b.WriteString(text[at:sp.from])
			b.WriteString(sp.mark)
		}
		at = sp.to
	}
	if at < n {
		b.WriteString(text[at:n])
		at = n
	}
	s.at = at
	return b.String()
}

// open returns where the text stops being complete (clean: a trailing
// escape or line break may still grow) and where the tail that could
// still grow into a form of a secret starts (hold, at most clean): the
// longest tail of any rendition of text[:clean] that is the beginning of
// a form.
func (r *Redactor) open(text string) (clean, hold int) {
	clean = len(text) - partialTail(text)
	hold = clean
	s := text[:clean]
	raw, dec := view{text: s}, decoded(s)
	var lines, lower view
	for _, sec := range r.secrets {
		hold = min(hold, begins(raw, sec.exact, clean), begins(dec, []string{sec.value}, clean))
		if sec.base64 != nil {
			if lower.text == "" {
				lines = unwrapped(s)
				lower = view{asciiLower(lines.text), lines.from, lines.to}
			}
			hold = min(hold, begins(lines, sec.base64, clean), begins(lower, []string{sec.hex}, clean))
		}
	}
	return clean, hold
}

// begins returns where, in the text v renders, the longest tail of v
// that is the beginning of one of forms (not all of it) starts; none
// when there is no such tail.
func begins(v view, forms []string, none int) int {
	n, best := len(v.text), none
	for _, f := range forms {
		for i := max(0, n-len(f)+1); i < n; i++ {
			if v.text[i] == f[0] && strings.HasPrefix(f, v.text[i:]) {
				from, _ := v.span(i, i+1)
				best = min(best, from)
				break
			}
		}
	}
	return best
}

// partialTail returns the length of the tail of s that is the beginning
// of an escape or a line break the renditions read (\u00e4, %C3, \r\n,
// their backslash escaped), not yet all of it; 0 when there is none.
func partialTail(s string) int {
	for k := max(0, len(s)-16); k < len(s); k++ {
		if partialEscape(s[k:]) {
			// The whole run of backslashes it ends is held: shown in
			// part, the rest would pair up otherwise (\\u0070).
			for k > 0 && s[k-1] == '\\' && s[k] == '\\' {
				k--
			}
			return len(s) - k
		}
	}
	return 0
}

// partialEscape reports whether t is the beginning of an escape or a line
// break, not all of it.
func partialEscape(t string) bool {
	switch t[0] {
	case '&': // an HTML character reference not yet ended by ;
		return len(t) < 12 && !strings.ContainsAny(t[1:], "; &") && htmlRefStart(t[1:])
	case '%':
		return len(t) < 3 && isHex(t[1:])
	case '\r':
		return len(t) == 1
	case '\\':
	default:
		return false
	}
	rest := t[backslashes(t):]
	switch {
	case rest == "":
		return true
	case rest[0] == 'r': // \r of an escaped \r\n
		m := backslashes(rest[1:])
		return len(rest) == 1 || m > 0 && len(rest) == 1+m
	case rest[0] != 'u':
		return false
	case len(rest) < 5:
		return isHex(rest[1:])
	}
	if !isHex(rest[1:5]) || !isHighSurrogate(rest[1:5]) {
		return false
	}
	low := rest[5:] // a high surrogate waits for its low half
	m := backslashes(low)
	switch {
	case low == "":
		return true
	case m == 0:
		return false
	case len(low) == m:
		return true
	}
	return low[m] == 'u' && len(low) < m+5 && isHex(low[m+1:])
}

// htmlRefStart reports whether t can begin the body of an HTML character
// reference: #, #x, digits, or the letters of a name.
func htmlRefStart(t string) bool {
	if t == "" || t == "#" || t == "#x" || t == "#X" {
		return true
	}
	if t[0] == '#' {
		d := strings.TrimLeft(t[1:], "xX")
		return isHex(d)
	}
	for name := range htmlNamed {
		if strings.HasPrefix(name, t) {
			return true
		}
	}
	return false
}

// isHighSurrogate reports whether the 4 hex digits h are a UTF-16 high
// surrogate (D800-DBFF).
func isHighSurrogate(h string) bool {
	return (h[0]|0x20) == 'd' && strings.ContainsRune("89abAB", rune(h[1]))
}

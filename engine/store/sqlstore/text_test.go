package sqlstore

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzEscapeText: any string survives EscapeText and UnescapeText byte
// for byte, and what EscapeText makes is text PostgreSQL can hold (UTF-8,
// no NUL); a string that needs no escape is left as it is.
func FuzzEscapeText(f *testing.F) {
	for _, s := range []string{"", "a\x00b", "\xff", "\uFDD0", "\uFDD0\"x\"", "\uFDD0\"a\\x00\"", "é", `"\x00"`, "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := EscapeText(s)
		if strings.IndexByte(e, 0) >= 0 || !utf8.ValidString(e) {
			t.Fatalf("EscapeText(%q) = %q: not text PostgreSQL holds", s, e)
		}
		if u := UnescapeText(e); u != s {
			t.Fatalf("UnescapeText(EscapeText(%q)) = %q", s, u)
		}
		if !needsEscape(s) && e != s {
			t.Fatalf("EscapeText(%q) = %q, want it unchanged", s, e)
		}
	})
}

package sqlstore

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// textMark begins a string that EscapeText changed. U+FDD0 is a Unicode
// noncharacter, "not for interchange": no text a person or a model
// writes begins with it, and a string that does is escaped too.
const textMark = "\uFDD0"

// EscapeText makes s storable in a column of PostgreSQL's text type,
// which cannot hold NUL or invalid UTF-8 (SQLite's can). A string with
// neither, which does not begin with textMark, is returned as it is; any
// other becomes textMark followed by s quoted as Go quotes it
// (strconv.Quote: NUL is \x00, an invalid byte \xff), which UnescapeText
// reverses exactly.
func EscapeText(s string) string {
	if !needsEscape(s) {
		return s
	}
	return textMark + strconv.Quote(s)
}

func needsEscape(s string) bool {
	return strings.HasPrefix(s, textMark) || strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s)
}

// UnescapeText reverses EscapeText. A string that begins with textMark
// but is not followed by a quoted string (written by an agentctl that did
// not escape) is returned as it is.
func UnescapeText(s string) string {
	if !strings.HasPrefix(s, textMark) {
		return s
	}
	u, err := strconv.Unquote(s[len(textMark):])
	if err != nil {
		return s
	}
	return u
}

// Package names checks the names of users and groups that agentctl
// records and matches, whatever their source: token users and groups,
// the trusted proxy's user header, the Slack user map, the server's
// roles, spec approvers and delegates, and whoever a decision or a
// message is made on behalf of (--as, "as").
//
// A Profile says what a name may hold. The default, the zero Profile,
// is ASCII. A server may allow Unicode names (Profile.Unicode); a
// Known set then refuses a name that looks like another known one
// (their confusable skeletons, Unicode TS #39, are equal).
package names

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/runenames"
)

// MaxLen is the longest name, in bytes.
const MaxLen = 128

// Profile is what a name may hold.
//
// The default profile (Unicode false) takes ASCII letters, digits, '.',
// '_', '-' and '@', the first a letter, a digit or '_': a name is
// printed in audit trails and passed to tools, where it must neither
// forge a line, nor drive a terminal, nor pass for an option, nor look
// like another name written in other letters.
//
// The Unicode profile takes those, and letters, combining marks and
// decimal digits of any script, with these rules: the name is in NFC
// and holds no compatibility characters (NFKC leaves it as it is: no
// full-width or mathematical letters); it is written in one script,
// Common and Inherited characters aside, or in Latin with Han and
// Hiragana and Katakana, Bopomofo or Hangul (TS #39's Highly Restrictive
// level); its digits are of one decimal system; nothing in it shows as
// nothing (default ignorable code points, variation selectors). Names
// that pass may still look alike: see Known.
type Profile struct {
	// Unicode allows names beyond ASCII (a server's names: {unicode:
	// true}).
	Unicode bool
}

// Check reports what is wrong with a name under the default profile: a
// *Error, or nil.
func Check(s string) error { return Profile{}.Check(s) }

// Check reports what is wrong with a name under p: a *Error, or nil.
// A group is checked without its "group:" prefix.
func (p Profile) Check(s string) error {
	switch {
	case s == "":
		return &Error{Name: s, At: -1, Why: "empty name"}
	case len(s) > MaxLen:
		return &Error{Name: s, At: -1, Why: fmt.Sprintf("longer than %d bytes", MaxLen)}
	}
	ascii := true
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return &Error{Name: s, At: i, Rune: r, Why: "not UTF-8"}
			}
		}
		if r < utf8.RuneSelf {
			if why := asciiChar(byte(r), i == 0); why != "" {
				return &Error{Name: s, At: i, Rune: r, Why: why}
			}
			continue
		}
		ascii = false
		if !p.Unicode {
			return &Error{Name: s, At: i, Rune: r, Why: "not ASCII (names are ASCII letters, digits, '.', '_', '-' and '@', unless a server allows Unicode names)"}
		}
		if why := unicodeChar(r, i == 0); why != "" {
			return &Error{Name: s, At: i, Rune: r, Why: why}
		}
	}
	if ascii {
		return nil
	}
	return unicodeName(s)
}

// asciiChar says why an ASCII character may not stand in a name, there
// or at all ("" when it may).
func asciiChar(c byte, first bool) string {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
		return ""
	case c == '.' || c == '-' || c == '@':
		if first {
			return "a name starts with a letter, a digit or '_'"
		}
		return ""
	case c == ':':
		return "not in a name: roles and approvers write a group as group:NAME"
	}
	return "not in a name: names are letters, digits, '.', '_', '-' and '@'"
}

// Error is a name its profile refuses: the character at byte At, or
// the name as a whole (At -1).
type Error struct {
	Name string // the name as given
	At   int    // the byte offset of the character at fault; -1: none
	Rune rune   // the character at fault
	Why  string // what is wrong
}

// Error says what is wrong and, for a character, which one and where,
// counting bytes from 1: "U+0430 CYRILLIC SMALL LETTER A at byte 3: not
// ASCII (...)".
func (e *Error) Error() string {
	if e.At < 0 {
		return e.Why
	}
	if _, size := utf8.DecodeRuneInString(e.Name[e.At:]); e.Rune == utf8.RuneError && size == 1 {
		return fmt.Sprintf("byte 0x%02X at byte %d: %s", e.Name[e.At], e.At+1, e.Why)
	}
	return fmt.Sprintf("%s at byte %d: %s", Describe(e.Rune), e.At+1, e.Why)
}

// Describe names a character as Unicode does: "U+0430 CYRILLIC SMALL
// LETTER A"; "U+001B (a control character)" for one with no name.
func Describe(r rune) string {
	name := runenames.Name(r)
	switch {
	case name == "<control>":
		return fmt.Sprintf("U+%04X (a control character)", r)
	case name == "" || strings.HasPrefix(name, "<"):
		if c := strings.Trim(name, "<>"); c != "" {
			return fmt.Sprintf("U+%04X (%s)", r, c)
		}
		return fmt.Sprintf("U+%04X", r)
	}
	return fmt.Sprintf("U+%04X %s", r, name)
}

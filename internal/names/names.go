// Package names checks the names of users and groups that agentctl
// records and matches: token users and groups, and whoever a decision or
// a message is made on behalf of (--as, "as").
package names

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// MaxLen is the longest name, in bytes.
const MaxLen = 128

// Check reports what is wrong with a user or group name: it is not
// empty, is UTF-8 of at most MaxLen bytes, and has no spaces, commas,
// colons (roles write groups as group:NAME) or control characters (a
// name is printed in audit trails, where it must not be able to forge a
// line or drive a terminal).
func Check(s string) error {
	switch {
	case s == "":
		return errors.New("empty name")
	case !utf8.ValidString(s):
		return errors.New("not UTF-8")
	case len(s) > MaxLen:
		return fmt.Errorf("longer than %d bytes", MaxLen)
	}
	for i, r := range s {
		switch {
		case unicode.IsSpace(r) || blank(r):
			return errors.New("a name has no spaces")
		case unicode.IsControl(r) || !unicode.IsPrint(r) || r == utf8.RuneError:
			return errors.New("a name has no control characters")
		case i == 0 && unicode.In(r, unicode.Mn, unicode.Me):
			return errors.New("a name does not start with a combining mark")
		case r == ',' || r == ':':
			return fmt.Errorf("a name has no %q", r)
		}
	}
	return nil
}

// blank reports characters that are printable but show as nothing or
// as a space, so that "alice" and "alice" plus one of them look alike.
func blank(r rune) bool {
	switch r {
	case '\u034f', '\u115f', '\u1160', '\u180e', '\u2800', '\u3164', '\uffa0':
		return true
	}
	return false
}

package names

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// unicodeChar says why a character beyond ASCII may not stand in a
// name of the Unicode profile, there or at all ("" when it may).
func unicodeChar(r rune, first bool) string {
	switch {
	case unicode.In(r, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point, unicode.Cf) || blank(r):
		return "shows as nothing or as a space"
	case !unicode.In(r, unicode.L, unicode.Mn, unicode.Mc, unicode.Nd):
		return "not a letter, a combining mark or a digit"
	case first && unicode.In(r, unicode.Mn, unicode.Mc):
		return "a name does not start with a combining mark"
	}
	return ""
}

// blank reports letters that show as nothing or as a space and are not
// default ignorable (those are refused as such).
func blank(r rune) bool {
	switch r {
	case '\u115f', '\u1160', '\u3164', '\uffa0', '\u2800':
		return true
	}
	return false
}

// unicodeName checks what concerns a Unicode name as a whole, once each
// of its characters passed: NFKC (no compatibility characters, NFC),
// one script, one decimal system.
func unicodeName(s string) error {
	if !norm.NFKC.IsNormalString(s) {
		return notNFKC(s)
	}
	var seen []string
	last := ""
	zero, prev := rune(-1), rune(-1)
	for i, r := range s {
		if unicode.Is(unicode.Soft_Dotted, prev) && unicode.Is(unicode.Mn, r) && norm.NFD.PropertiesString(string(r)).CCC() == 230 {
			// ı̇ or i̇ reads as i (UTS #39, 5.4): its skeleton does not say so.
			return &Error{Name: s, At: i, Rune: r, Why: fmt.Sprintf("a mark above after %s, which has a dot of its own: it reads as the letter alone", Describe(prev))}
		}
		prev = r
		if unicode.Is(unicode.Nd, r) {
			if z := zeroOf(r); zero < 0 {
				zero = z
			} else if z != zero {
				return &Error{Name: s, At: i, Rune: r, Why: fmt.Sprintf("a digit of another decimal system than %s's", Describe(zero))}
			}
		}
		sc := scriptOf(r, last)
		if sc == "" {
			continue
		}
		last = sc
		if slices.Contains(seen, sc) {
			continue
		}
		if !covered(append(seen, sc)) {
			return &Error{Name: s, At: i, Rune: r, Why: fmt.Sprintf("%s among %s: a name is written in one script (or Latin with Han and kana, Bopomofo or Hangul)",
				sc, strings.Join(seen, " and "))}
		}
		seen = append(seen, sc)
	}
	return nil
}

// notNFKC says why s, which NFKC changes, is refused: a compatibility
// character in it, else a sequence that is not composed (NFC).
func notNFKC(s string) error {
	for i, r := range s {
		if k := norm.NFKC.String(string(r)); k != string(r) {
			return &Error{Name: s, At: i, Rune: r, Why: fmt.Sprintf("a compatibility character: write %q", k)}
		}
	}
	at := norm.NFC.QuickSpanString(s)
	r, _ := utf8.DecodeRuneInString(s[at:])
	return &Error{Name: s, At: at, Rune: r, Why: fmt.Sprintf("the name is not in Unicode normalization form C (NFC): write it composed, %q", norm.NFC.String(s))}
}

// restrictive are the scripts of TS #39's Highly Restrictive level,
// which may make one name together.
var restrictive = [...][]string{{"Latin", "Han", "Hiragana", "Katakana"}, {"Latin", "Han", "Bopomofo"}, {"Latin", "Han", "Hangul"}}

// scriptOf returns the name of r's script; "" for Common and Inherited,
// which go with any. The script of the character before, last, is
// looked at first: a name's letters are mostly of one script.
func scriptOf(r rune, last string) string {
	if last != "" && unicode.Is(unicode.Scripts[last], r) {
		return last
	}
	if unicode.In(r, unicode.Common, unicode.Inherited) {
		return ""
	}
	for _, n := range [...]string{"Latin", "Cyrillic", "Greek", "Han", "Hiragana", "Katakana", "Hangul", "Arabic", "Hebrew", "Devanagari"} {
		if unicode.Is(unicode.Scripts[n], r) {
			return n
		}
	}
	for n, t := range unicode.Scripts { // scripts do not overlap: any order finds the one
		if unicode.Is(t, r) {
			return n
		}
	}
	return ""
}

// covered reports whether a set of scripts may make one name: a single
// script, or a subset of one of the restrictive sets.
func covered(set []string) bool {
	if len(set) <= 1 {
		return true
	}
	for _, allowed := range restrictive {
		if !slices.ContainsFunc(set, func(sc string) bool { return !slices.Contains(allowed, sc) }) {
			return true
		}
	}
	return false
}

// zeroOf returns the zero of decimal digit r's system: decimal digits
// come in runs of ten, from zero to nine (several runs may follow each
// other, as the mathematical digits do).
func zeroOf(r rune) rune {
	start := r
	for unicode.Is(unicode.Nd, start-1) {
		start--
	}
	return r - (r-start)%10
}

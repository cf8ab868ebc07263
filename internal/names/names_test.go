package names

import (
	"errors"
	"strings"
	"testing"
)

// checkProfile checks that p takes each of ok, and refuses each of bad
// with a *Error saying what it maps to.
func checkProfile(t *testing.T, p Profile, ok []string, bad map[string]string) {
	t.Helper()
	for _, s := range ok {
		if err := p.Check(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for s, want := range bad {
		err := p.Check(s)
		var ne *Error
		if !errors.As(err, &ne) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v; want a *Error saying %q", s, err, want)
		}
	}
}

func TestCheckDefault(t *testing.T) {
	if err := Check("alice"); err != nil {
		t.Errorf("Check: %v", err)
	}
	ok := []string{"alice", "chatops-bot", "alice@example.com", "svc_deploy", "a.b", "_svc", "1alice", "A", strings.Repeat("a", MaxLen)}
	checkProfile(t, Profile{}, ok, map[string]string{
		"":                            "empty name",
		"a b":                         "U+0020 SPACE at byte 2: not in a name",
		"a\nb":                        "U+000A (a control character) at byte 2",
		"a\x1b[2Kb":                   "U+001B (a control character) at byte 2",
		"a,b":                         "U+002C COMMA at byte 2",
		"group:sre":                   "U+003A COLON at byte 6: not in a name: roles and approvers write a group as group:NAME",
		"o'brien":                     "U+0027 APOSTROPHE at byte 2",
		"jürgen":                      "U+00FC LATIN SMALL LETTER U WITH DIAERESIS at byte 2: not ASCII",
		"trаlice":                     "U+0430 CYRILLIC SMALL LETTER A at byte 3: not ASCII",
		"ａlice":                       "U+FF41 FULLWIDTH LATIN SMALL LETTER A at byte 1: not ASCII",
		"ալice":                       "U+0561 ARMENIAN SMALL LETTER AYB at byte 1",
		"a\xffb":                      "byte 0xFF at byte 2: not UTF-8",
		"a\ufffd":                     "U+FFFD REPLACEMENT CHARACTER at byte 2",
		"-alice":                      "U+002D HYPHEN-MINUS at byte 1: a name starts with a letter, a digit or '_'",
		".alice":                      "U+002E FULL STOP at byte 1: a name starts",
		"@alice":                      "U+0040 COMMERCIAL AT at byte 1: a name starts",
		"a\u200bb":                    "U+200B ZERO WIDTH SPACE at byte 2",
		"a\u202eb":                    "U+202E RIGHT-TO-LEFT OVERRIDE at byte 2",
		"bob$":                        "U+0024 DOLLAR SIGN at byte 4",
		strings.Repeat("a", 1+MaxLen): "longer than 128 bytes",
	})
}

func TestCheckUnicode(t *testing.T) {
	ok := []string{"alice", "jürgen", "Иван", "αλέξης", "山田", "山田タロウ", "yamadaタロウ", "김민준", "ᎠᎪᏙᎬ", "ցօ", "১২৩", "李.wei"}
	checkProfile(t, Profile{Unicode: true}, ok, map[string]string{
		"trаlice":      "U+0430 CYRILLIC SMALL LETTER A at byte 3: Cyrillic among Latin: a name is written in one script",
		"раypal":       "U+0079 LATIN SMALL LETTER Y at byte 5: Latin among Cyrillic",
		"Ωmega":        "U+006D LATIN SMALL LETTER M at byte 3: Latin among Greek",
		"Ꮪam":          "U+0061 LATIN SMALL LETTER A at byte 4: Latin among Cherokee",
		"ալice":        "U+0069 LATIN SMALL LETTER I at byte 5: Latin among Armenian",
		"Иванαλ":       "U+03B1 GREEK SMALL LETTER ALPHA at byte 9: Greek among Cyrillic",
		"ａlice":        `U+FF41 FULLWIDTH LATIN SMALL LETTER A at byte 1: a compatibility character: write "a"`,
		"ｱキラ":          `U+FF71 HALFWIDTH KATAKANA LETTER A at byte 1: a compatibility character: write "ア"`,
		"𝐚lice":        "U+1D41A MATHEMATICAL BOLD SMALL A at byte 1: a compatibility character",
		"ⅰvan":         "U+2170 SMALL ROMAN NUMERAL ONE at byte 1: not a letter, a combining mark or a digit",
		"ju\u0308rgen": "not in Unicode normalization form C (NFC): write it composed",
		"1২":           "U+09E8 BENGALI DIGIT TWO at byte 2: a digit of another decimal system than U+0030 DIGIT ZERO's",
		"a\u200db":     "U+200D ZERO WIDTH JOINER at byte 2: shows as nothing",
		"a\ufe0fb":     "U+FE0F VARIATION SELECTOR-16 at byte 2: shows as nothing",
		"a\u034fb":     "U+034F COMBINING GRAPHEME JOINER at byte 2: shows as nothing",
		"a\u3164":      "U+3164 HANGUL FILLER at byte 2: shows as nothing",
		"\u115fa":      "U+115F HANGUL CHOSEONG FILLER at byte 1: shows as nothing",
		"\u0301a":      "U+0301 COMBINING ACUTE ACCENT at byte 1: a name does not start with a combining mark",
		"a\u00a0b":     "U+00A0 NO-BREAK SPACE at byte 2: not a letter",
		"a b":          "U+0020 SPACE at byte 2",
		"group:山田":     "U+003A COLON at byte 6",
		"a\u2028b":     "U+2028 LINE SEPARATOR at byte 2",
		"ali\u0307ce":  "U+0307 COMBINING DOT ABOVE at byte 4: a mark above after U+0069 LATIN SMALL LETTER I, which has a dot of its own",
		"ij\u0301":     "U+0301 COMBINING ACUTE ACCENT at byte 3: a mark above after U+006A LATIN SMALL LETTER J",
		"Ивані\u0307":  "U+0307 COMBINING DOT ABOVE at byte 11: a mark above after U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I",
	})
}

func TestKnownLookAlikes(t *testing.T) {
	var k Known
	for _, n := range []string{"tralice", "paypal", "alice", "ALICE", "BET", "go", "DAVE", "sre", "bob1", "mary"} {
		if err := k.Add(n, "readers"); err != nil {
			t.Fatalf("add %q: %v", n, err)
		}
	}
	for name, other := range map[string]string{
		"trаlice": "tralice", // Cyrillic а
		"раypal":  "paypal",  // Cyrillic р, а
		"ａlice":   "alice",   // full-width a
		"ΑLICE":   "ALICE",   // Greek Α
		"ᏴᎬᎢ":     "BET",     // Cherokee, every letter
		"ցօ":      "go",      // Armenian, every letter
		"ᎠᎪᏙᎬ":    "DAVE",    // Cherokee
		"ѕrе":     "sre",     // Cyrillic ѕ, е
	} {
		err := k.LookAlike(name)
		var le *LookAlikeError
		if !errors.As(err, &le) || le.Other != other || le.Name != name {
			t.Errorf("%q: got %v; want it to look like %q", name, err, other)
		}
		if err := k.Add(name, "approvers"); err == nil {
			t.Errorf("%q added beside %q", name, other)
		}
	}
	for _, distinct := range []string{"jürgen", "Иван", "山田", "tralice2", "bob", "Мария"} {
		if err := k.Add(distinct, "approvers"); err != nil {
			t.Errorf("%q: %v", distinct, err)
		}
	}
	for _, ascii := range []string{"bobl", "rnary"} { // look like bob1 and mary, in ASCII both
		if err := k.Add(ascii, "runners"); err != nil {
			t.Errorf("%q: %v", ascii, err)
		}
	}
	if err := k.LookAlike("bоbl"); err == nil { // a Cyrillic о
		t.Error("bоbl passes beside bob1 and bobl")
	}
	if err := k.Add("tralice", "runners"); err != nil {
		t.Errorf("a name added again: %v", err)
	}
	want := `looks like "tralice" (readers): U+0430 CYRILLIC SMALL LETTER A at byte 3 where it has U+0061 LATIN SMALL LETTER A (their confusable skeletons, Unicode TS #39, are equal)`
	if err := k.LookAlike("trаlice"); err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	var none *Known
	if none.LookAlike("trаlice") != nil || none.Len() != 0 {
		t.Error("a nil Known knows a name")
	}
}

func TestConfusable(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{{"trаlice", "tralice", true}, {"ᏴᎬᎢ", "BET", true}, {"ցօ", "go", true}, {"ΑLICE", "ALICE", true},
		{"tralice", "tralice", false}, {"bob1", "bobl", false}, {"jürgen", "jurgen", false}} {
		if got := Confusable(c.a, c.b); got != c.want {
			t.Errorf("Confusable(%q, %q) = %v", c.a, c.b, got)
		}
	}
}

func TestSkeleton(t *testing.T) {
	for in, want := range map[string]string{"trаlice": "tralice", "раypal": "paypal", "ａlice": "alice", "ᏴᎬᎢ": "BET", "ցօ": "go", "rn": "rn", "m": "rn"} {
		if got := Skeleton(in); got != want {
			t.Errorf("Skeleton(%q) = %q, want %q", in, got, want)
		}
	}
}

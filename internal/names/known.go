package names

import (
	"fmt"
	"unicode/utf8"

	"github.com/mtibben/confusables"
)

// Skeleton is a name's confusable skeleton (Unicode TS #39, section 4):
// the name in NFD, each character mapped by confusables.txt (Unicode
// 13.0.0, as github.com/mtibben/confusables ships it), then NFD again.
// Two names with the same skeleton look alike: "trаlice" (with a
// Cyrillic а) and "tralice", "раypal" and "paypal", "ａlice" and
// "alice". A skeleton is for comparing, never for showing.
func Skeleton(s string) string { return confusables.Skeleton(s) }

// Known is a set of the names of known principals (users and groups,
// from wherever they are named), to refuse a name that looks like
// another: one with the same skeleton. The zero Known is empty and
// ready to use; a Known is not safe for concurrent use while it is
// added to.
type Known struct {
	bySkeleton map[string]knownName
}

// knownName is a known name and where it was met.
type knownName struct{ name, where string }

// Add adds name, met at where (such as "readers at config.yaml:3:12"),
// unless another known name looks like it: then it returns a
// *LookAlikeError and adds nothing. A name added again is no error.
func (k *Known) Add(name, where string) error {
	if err := k.LookAlike(name); err != nil {
		return err
	}
	if k.bySkeleton == nil {
		k.bySkeleton = map[string]knownName{}
	}
	sk := Skeleton(name)
	if _, ok := k.bySkeleton[sk]; !ok {
		k.bySkeleton[sk] = knownName{name, where}
	}
	return nil
}

// LookAlike returns a *LookAlikeError when a known name other than
// name has name's skeleton, and one of the two is beyond ASCII; else
// nil. Two ASCII names never count as look-alikes ("bob1" and "bobl"):
// the default profile takes them both, and allowing Unicode names
// refuses none it took. A nil Known knows no names.
func (k *Known) LookAlike(name string) error {
	if k == nil || len(k.bySkeleton) == 0 {
		return nil
	}
	other, ok := k.bySkeleton[Skeleton(name)]
	if !ok || other.name == name || ascii(name) && ascii(other.name) {
		return nil
	}
	return &LookAlikeError{Name: name, Other: other.name, Where: other.where}
}

// Confusable reports whether two distinct names look alike: their
// skeletons are equal, and one of them is beyond ASCII (as LookAlike).
func Confusable(a, b string) bool {
	return a != b && !(ascii(a) && ascii(b)) && Skeleton(a) == Skeleton(b)
}

func ascii(s string) bool {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// Len is how many names look different among those known.
func (k *Known) Len() int {
	if k == nil {
		return 0
	}
	return len(k.bySkeleton)
}

// LookAlikeError is a name that looks like another known one.
type LookAlikeError struct {
	Name, Other string // the name refused, and the known one it looks like
	Where       string // where Other was met; "" when not said
}

// Error names the other name, where it was met, and the first
// character that differs, counting bytes from 1: `looks like "tralice"
// (readers at config.yaml:2:10): U+0430 CYRILLIC SMALL LETTER A at byte
// 3 where it has U+0061 LATIN SMALL LETTER A (...)`.
func (e *LookAlikeError) Error() string {
	where := ""
	if e.Where != "" {
		where = " (" + e.Where + ")"
	}
	at, r, o := firstDiff(e.Name, e.Other)
	return fmt.Sprintf("looks like %q%s: %s at byte %d where it has %s (their confusable skeletons, Unicode TS #39, are equal)",
		e.Other, where, Describe(r), at+1, Describe(o))
}

// firstDiff returns where a and b first differ, rune by rune, and the
// runes there (utf8.RuneError past the end of one).
func firstDiff(a, b string) (int, rune, rune) {
	i := 0
	for i < len(a) && i < len(b) {
		ra, na := utf8.DecodeRuneInString(a[i:])
		rb, _ := utf8.DecodeRuneInString(b[i:])
		if ra != rb {
			return i, ra, rb
		}
		i += na
	}
	ra, _ := utf8.DecodeRuneInString(a[i:])
	rb, _ := utf8.DecodeRuneInString(b[i:])
	return i, ra, rb
}

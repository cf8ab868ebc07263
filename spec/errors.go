package spec

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Pos is a place in a spec file. Line and Col are 1-based; zero means unknown.
type Pos struct {
	File string
	Line int
	Col  int
}

func (p Pos) String() string {
	switch {
	case p.Line == 0:
		return p.File
	case p.Col == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Error is one problem found in a spec, at a place.
type Error struct {
	Pos Pos
	Msg string
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

// Errors is every problem found in a spec, sorted by place. Load returns
// an Errors when the spec is invalid.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// add records a problem.
func (es *Errors) add(p Pos, format string, args ...any) {
	*es = append(*es, &Error{Pos: p, Msg: fmt.Sprintf(format, args...)})
}

// sorted returns the errors sorted by place with exact duplicates removed,
// or nil when there are none.
func (es Errors) sorted() error {
	if len(es) == 0 {
		return nil
	}
	slices.SortStableFunc(es, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Pos.File, b.Pos.File), cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Col, b.Pos.Col), cmp.Compare(a.Msg, b.Msg))
	})
	return Errors(slices.CompactFunc(es, func(a, b *Error) bool { return *a == *b }))
}

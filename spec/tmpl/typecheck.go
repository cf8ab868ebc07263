package tmpl

import (
	"errors"
	"fmt"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/types"
)

// Types gives the static type of each variable a condition may read, for
// Check: a types.Map for an object whose fields are known (with
// types.Extra for the others), types.Any where nothing is known.
type Types = types.Map

// Check type-checks a condition against the static types of its
// variables, as `validate` does with a tool's input schema: an
// expression whose type is known and is not a boolean, or an operator
// given known types it cannot take, is an error. The error is an *Error
// at the offending place when expr-lang names a column, else at the
// expression. A constant passes. Check never changes how e evaluates:
// the program e runs is the one Parse compiled without types.
func (e Expr) Check(env Types) error {
	if e.expr == nil || len(e.expr.parts) != 1 || e.expr.parts[0].prog == nil {
		return nil
	}
	p := e.expr.parts[0]
	src := p.prog.Source().String()
	_, err := expr.Compile(src, expr.Env(env), expr.AsBool())
	if err == nil {
		return nil
	}
	msg, at := err.Error(), 0
	var fe *file.Error
	if errors.As(err, &fe) {
		msg, at = fe.Message, byteOffset(src, fe.Column)
	}
	if got, ok := strings.CutPrefix(msg, "expected bool, but got "); ok {
		msg = fmt.Sprintf("its type is %s; want a boolean (true or false)", typeName(got))
	}
	return &Error{Offset: p.off + at, Expr: src, Msg: msg}
}

// typeName names a Go type the way a spec's author knows it.
func typeName(goType string) string {
	switch {
	case goType == "string":
		return "string"
	case strings.HasPrefix(goType, "float"), strings.HasPrefix(goType, "int"):
		return "number"
	case strings.HasPrefix(goType, "map["):
		return "object"
	case strings.HasPrefix(goType, "[]"):
		return "list"
	}
	return goType
}

// Package jcs writes JSON in the canonical form of RFC 8785 (the JSON
// Canonicalization Scheme): no insignificant whitespace, object members
// sorted by the UTF-16 code units of their names, numbers as ECMAScript
// writes them, strings with the fewest escapes. Two programs that read
// the same JSON value write the same bytes, so a hash or a signature of
// them is a hash or a signature of the value.
package jcs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrNotIJSON is returned for input RFC 8785 cannot canonicalize: not
// UTF-8, a duplicate member name, or a number beyond a double's range.
var ErrNotIJSON = errors.New("not I-JSON (RFC 7493)")

// maxDepth bounds nesting, so that hostile input cannot exhaust the stack.
const maxDepth = 1000

// Canonicalize returns the canonical form of one JSON text.
func Canonicalize(in []byte) ([]byte, error) {
	if !utf8.Valid(in) {
		return nil, fmt.Errorf("%w: invalid UTF-8", ErrNotIJSON)
	}
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	var b bytes.Buffer
	if err := value(dec, &b, 0); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("jcs: data after the JSON value")
	}
	return b.Bytes(), nil
}

// Marshal returns the canonical form of v as encoding/json encodes it.
func Marshal(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return Canonicalize(raw)
}

// value writes the next value of dec in canonical form.
func value(dec *json.Decoder, b *bytes.Buffer, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("jcs: nested deeper than %d", maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("jcs: %w", err)
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			return array(dec, b, depth)
		}
		return object(dec, b, depth)
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			return fmt.Errorf("%w: number %s: %v", ErrNotIJSON, t, err)
		}
		s, err := Number(f)
		if err != nil {
			return err
		}
		b.WriteString(s)
	case string:
		String(b, t)
	case bool:
		b.WriteString(strconv.FormatBool(t))
	case nil:
		b.WriteString("null")
	}
	return nil
}

func array(dec *json.Decoder, b *bytes.Buffer, depth int) error {
	b.WriteByte('[')
	for i := 0; dec.More(); i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := value(dec, b, depth+1); err != nil {
			return err
		}
	}
	b.WriteByte(']')
	_, err := dec.Token()
	return err
}

type member struct {
	key   string
	units []uint16
	val   []byte
}

func object(dec *json.Decoder, b *bytes.Buffer, depth int) error {
	var ms []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("jcs: %w", err)
		}
		k, _ := tok.(string)
		if seen[k] {
			return fmt.Errorf("%w: duplicate member %q", ErrNotIJSON, k)
		}
		seen[k] = true
		var v bytes.Buffer
		if err := value(dec, &v, depth+1); err != nil {
			return err
		}
		ms = append(ms, member{k, utf16.Encode([]rune(k)), v.Bytes()})
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("jcs: %w", err)
	}
	slices.SortFunc(ms, func(x, y member) int { return slices.Compare(x.units, y.units) })
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		String(b, m.key)
		b.WriteByte(':')
		b.Write(m.val)
	}
	b.WriteByte('}')
	return nil
}

// String writes s as a canonical JSON string: quote, backslash and the
// control characters escaped (\b \t \n \f \r, others as \u00xx), all
// else as it is, in UTF-8.
func String(b *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\b':
			b.WriteString(`\b`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\f':
			b.WriteString(`\f`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}

// Number writes f as ECMAScript's Number.prototype.toString does (the
// shortest digits that read back as f; -0 is 0); NaN and the infinities
// have no JSON form.
func Number(f float64) (string, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", fmt.Errorf("%w: %v has no JSON form", ErrNotIJSON, f)
	}
	if f == 0 {
		return "0", nil
	}
	if f < 0 {
		s, err := Number(-f)
		return "-" + s, err
	}
	// d.ddde±x: the shortest digits, and the exponent.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	k, n := len(digits), x+1
	switch {
	case k <= n && n <= 21:
		return digits + strings.Repeat("0", n-k), nil
	case 0 < n && n <= 21:
		return digits[:n] + "." + digits[n:], nil
	case -6 < n && n <= 0:
		return "0." + strings.Repeat("0", -n) + digits, nil
	}
	sign := "+"
	if n-1 < 0 {
		sign = "-"
	}
	abs := strconv.Itoa(max(n-1, 1-n))
	if k == 1 {
		return digits + "e" + sign + abs, nil
	}
	return digits[:1] + "." + digits[1:] + "e" + sign + abs, nil
}

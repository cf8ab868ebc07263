// Package textcheck finds what agentctl refuses in text it is given: bytes
// that are not UTF-8, and in JSON, an escaped lone surrogate (\ud800),
// which no UTF-8 text can hold. Go's decoders would replace either with
// U+FFFD without a word; agentctl says where instead. NUL is text, and
// is kept.
package textcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Error says where text breaks and how.
type Error struct {
	// Offset is the byte offset of the first offending byte.
	Offset int
	// Pointer is the JSON pointer of the string holding it (JSON only;
	// "" for the top-level value).
	Pointer string
	// Problem is what is wrong, e.g. "byte 0xff is not UTF-8".
	Problem string
}

// Error says what is wrong and where, counting bytes from 1.
func (e *Error) Error() string {
	return fmt.Sprintf("%s at byte %d", e.Problem, e.Offset+1)
}

// Text reports the first byte of s that is not UTF-8, or nil.
func Text(s string) *Error {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return &Error{Offset: i, Problem: fmt.Sprintf("byte 0x%02x is not UTF-8", s[i])}
		}
		i += n
	}
	return nil
}

// JSON reports the first byte of a JSON text that is not UTF-8, or the
// first escaped lone surrogate, with the pointer of the string holding
// it; nil when there is none. It does not check the JSON's syntax.
func JSON(b []byte) *Error {
	off, problem := scan(b)
	if off < 0 {
		return nil
	}
	return &Error{Offset: off, Pointer: pointerAt(b, off), Problem: problem}
}

// scan finds the first offence in b: its offset and what it is, or -1.
func scan(b []byte) (int, string) {
	in := false
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '"':
			in = !in
		case c == '\\' && in && i+1 < len(b) && b[i+1] == 'u':
			if n, ok := surrogate(b[i:]); !ok {
				return i, fmt.Sprintf("%s is a lone surrogate", b[i:i+6])
			} else if n > 0 {
				i += n
				continue
			}
			i += 2
			continue
		case c == '\\' && in:
			i += 2
			continue
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return i, fmt.Sprintf("byte 0x%02x is not UTF-8", c)
			}
			i += n
			continue
		}
		i++
	}
	return -1, ""
}

// surrogate looks at a \uXXXX escape at the start of b: n is the length
// of a valid surrogate pair (0 for an escape of no surrogate); ok is
// false for a lone surrogate.
func surrogate(b []byte) (n int, ok bool) {
	hi, okHi := hex4(b)
	if !okHi || hi < 0xD800 || hi > 0xDFFF {
		return 0, true
	}
	if hi >= 0xDC00 || len(b) < 12 || b[6] != '\\' || b[7] != 'u' {
		return 0, false
	}
	lo, okLo := hex4(b[6:])
	if !okLo || lo < 0xDC00 || lo > 0xDFFF {
		return 0, false
	}
	return 12, true
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 6 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[2:6]), 16, 32)
	return rune(v), err == nil
}

// pointerAt is the JSON pointer of the value or key at byte off of b,
// found by walking its tokens; "" when it cannot tell.
func pointerAt(b []byte, off int) string {
	dec := json.NewDecoder(bytes.NewReader(b))
	var path []frame
	for {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		end := dec.InputOffset()
		key := len(path) > 0 && path[len(path)-1].object && !path[len(path)-1].valueNext
		if n := len(path); n > 0 && !path[n-1].object {
			path[n-1].name = strconv.Itoa(path[n-1].index)
		}
		if off >= int(before) && off < int(end) {
			if key {
				s, _ := tok.(string)
				return pointer(path[:len(path)-1]) + "/" + escape(s)
			}
			return pointer(path)
		}
		path = step(path, tok, key)
	}
}

// frame is one open object or array on the way to a token.
type frame struct {
	object    bool
	valueNext bool   // object: the key is read, its value comes next
	name      string // the current key, or index, as a pointer's token
	index     int    // array: the index of the next value
}

// step moves path past tok.
func step(path []frame, tok json.Token, key bool) []frame {
	if key {
		s, _ := tok.(string)
		top := &path[len(path)-1]
		top.name, top.valueNext = escape(s), true
		return path
	}
	if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
		path = path[:len(path)-1]
		return valueDone(path)
	}
	if d, ok := tok.(json.Delim); ok {
		return append(path, frame{object: d == '{'})
	}
	return valueDone(path)
}

// valueDone moves the innermost container past a value.
func valueDone(path []frame) []frame {
	if len(path) == 0 {
		return path
	}
	top := &path[len(path)-1]
	if top.object {
		top.valueNext = false
	} else {
		top.index++
	}
	return path
}

func pointer(path []frame) string {
	var p []byte
	for _, f := range path {
		p = append(p, '/')
		p = append(p, f.name...)
	}
	return string(p)
}

// escape escapes a key as a JSON pointer's token (RFC 6901).
func escape(s string) string {
	var out []byte
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '~':
			out = append(out, "~0"...)
		case '/':
			out = append(out, "~1"...)
		default:
			out = append(out, s[i])
		}
	}
	return string(out)
}

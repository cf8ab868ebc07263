package redact

import (
	"encoding/base64"
	"encoding/hex"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
)

// streamSecrets are the secrets of the stream tests: plain, with
// characters that take escapes, non-ASCII, and beyond the BMP.
var streamSecrets = map[string]string{
	"KEY": "sk-proj-7Hq2ZxW9mN4pL8vR",
	"AWS": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
	"UML": "pässwörd-1234",
	"AMP": `p&ss<w>rd "5678"\x`,
	"EMO": "key-😀-9876",
}

// streamTexts hold the stream secrets in every form the cut knows, and
// text that merely begins like them.
func streamTexts() []string {
	k, aws := streamSecrets["KEY"], streamSecrets["AWS"]
	return []string{
		"plain " + k + " twice " + k + k + " end",
		"almost sk-proj-7Hq2 and sk-pro then s",
		"b64 " + base64.StdEncoding.EncodeToString([]byte(k)) + " url " + base64.URLEncoding.EncodeToString([]byte("ab"+k)),
		"raw " + base64.RawStdEncoding.EncodeToString([]byte(k)) + " hex " + hex.EncodeToString([]byte(k)) + " HEX " + strings.ToUpper(hex.EncodeToString([]byte(k))),
		"wrapped " + wrap(base64.StdEncoding.EncodeToString([]byte("x"+aws)), 8, `\r\n`) + " and " + wrap(hex.EncodeToString([]byte(aws)), 10, "\r\n"),
		"query " + url.QueryEscape(streamSecrets["AMP"]) + " path " + url.PathEscape(aws),
		strings.ReplaceAll(aws, "/", `\/`) + " " + strings.ReplaceAll(aws, "/", `\\/`) + " " + strings.ReplaceAll(aws, "/", `\u002F`),
		`p\u00e4ssw\u00f6rd-1234 ` + uescape(streamSecrets["UML"], `\u%04X`) + ` p%c3%a4ssw%c3%b6rd-1234`,
		`p\u0026ss\u003cw\u003erd \"5678\"\\x and p&amp;ss&lt;w&gt;rd &quot;5678&quot;\x`,
		`key-\ud83d\ude00-9876 key-\\uD83D\\uDE00-9876 key-😀-9876`,
		`trailing \ and % and \u00 and \r`,
	}
}

// TestStreamPieces streams texts holding secrets in every split: one
// byte a piece, every size of piece, and at random; joined, what the
// Stream shows is the cut of the whole text, and no piece shows part of
// a secret's form beyond what the cut of the text shows.
func TestStreamPieces(t *testing.T) {
	names := []string{"KEY", "AWS", "UML", "AMP", "EMO"}
	r := New(names, streamSecrets)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, text := range streamTexts() {
		want := r.Cut(text)
		var splits [][]int
		for size := 1; size <= len(text); size++ {
			var at []int
			for i := size; i < len(text); i += size {
				at = append(at, i)
			}
			splits = append(splits, at)
		}
		for range 200 {
			var at []int
			for i := rng.IntN(8) + 1; i < len(text); i += rng.IntN(12) + 1 {
				at = append(at, i)
			}
			splits = append(splits, at)
		}
		for _, at := range splits {
			s, got, prev := r.Stream(), "", 0
			for _, i := range append(at, len(text)) {
				out := s.Next(text[prev:i])
				if !strings.HasPrefix(want, got+out) {
					t.Fatalf("%q split at %v: shows %q after %q; the cut text is %q", text, at, out, got, want)
				}
				got, prev = got+out, i
			}
			if got += s.End(); got != want {
				t.Fatalf("%q split at %v: shows %q, want %q", text, at, got, want)
			}
		}
	}
}

// TestStreamHoldsLittle shows ordinary text as it arrives: only a tail
// that begins a form of a secret waits.
func TestStreamHoldsLittle(t *testing.T) {
	s := New([]string{"KEY"}, streamSecrets).Stream()
	for _, c := range []struct{ in, out string }{
		{"Restarting ", "Restarting "},
		{"the services", "the service"}, // "s" may begin sk-proj-...
		{" now.", "s now."},             // it did not
		{" sk-proj-7H", " "},
		{"q2ZxW9mN4pL8vR done", "[env.KEY] done"},
		{`\u00`, ""},
		{"e4", `\u00e4`},
	} {
		if got := s.Next(c.in); got != c.out {
			t.Errorf("Next(%q) = %q, want %q", c.in, got, c.out)
		}
	}
	if got := s.End(); got != "" {
		t.Errorf("End() = %q", got)
	}
	var none *Redactor
	ns := none.Stream()
	if got := ns.Next("sk-"); got != "sk-" || ns.End() != "" {
		t.Errorf("nil redactor's stream: %q", got)
	}
}

// streamFragments are what FuzzStream builds texts of: the stream
// secrets' forms, parts of them, escapes, line breaks and plain text.
func streamFragments() []string {
	var out []string
	for _, text := range streamTexts() {
		out = append(out, strings.Fields(text)...)
	}
	k := streamSecrets["KEY"]
	return append(out, k[:5], k[5:], " ", `\`, `\\`, "%", "%c", "\r", "\n", `\r\n`, `\u00`, `\u`, "s", "c2", "73", "\r\n", `\n`, `\ud83d`, "a")
}

// FuzzStream streams texts made of secrets' forms, their parts, escapes
// and line breaks, split anywhere: joined, what the Stream shows is the
// cut of the whole text.
func FuzzStream(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3}, []byte{5, 7})
	f.Add([]byte{40, 41, 42, 43, 44, 45, 30, 31}, []byte{1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
	names := []string{"KEY", "AWS", "UML", "AMP", "EMO"}
	r := New(names, streamSecrets)
	frags := streamFragments()
	f.Fuzz(func(t *testing.T, pick, cuts []byte) {
		var b strings.Builder
		for _, p := range pick {
			b.WriteString(frags[int(p)%len(frags)])
		}
		text := b.String()
		s, got, prev := r.Stream(), "", 0
		for _, c := range cuts {
			i := min(prev+int(c)%24, len(text))
			got += s.Next(text[prev:i])
			prev = i
		}
		got += s.Next(text[prev:]) + s.End()
		if want := r.Cut(text); got != want {
			t.Fatalf("%q split by %v: shows %q, want %q", text, cuts, got, want)
		}
	})
}

// BenchmarkStream streams 16 KiB answers: ordinary text and text dense
// with backslashes and percent signs four bytes a piece, and text whose
// every byte may begin a secret's form a byte a piece (the text held
// stays short).
func BenchmarkStream(b *testing.B) {
	r := New([]string{"KEY"}, streamSecrets)
	for _, c := range []struct {
		name, text string
		piece      int
	}{
		{"plain", strings.Repeat("some ordinary answer text, with words and numbers 12345\n", 16<<10/56), 4},
		{"escapes", strings.Repeat(`C:\Users\ops\logs at 50% load \n`, 16<<10/32), 4},
		{"held", strings.Repeat("s", 16<<10), 1},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				s := r.Stream()
				for i := 0; i < len(c.text); i += c.piece {
					s.Next(c.text[i:min(i+c.piece, len(c.text))])
				}
				s.End()
			}
		})
	}
}

package redact

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// wrap breaks s into lines of n characters joined by sep, as base64 (76)
// and xxd -p (60) write them.
func wrap(s string, n int, sep string) string {
	var lines []string
	for len(s) > n {
		lines = append(lines, s[:n])
		s = s[n:]
	}
	return strings.Join(append(lines, s), sep)
}

// uescape writes every character of s as a \u escape in format f.
func uescape(s, f string) string {
	var b strings.Builder
	for _, c := range s {
		fmt.Fprintf(&b, f, c)
	}
	return b.String()
}

// TestCutTextEscapes cuts a secret in the JSON escapes of other languages
// (PHP's \/, Python's \u00e4, every character escaped, either case) and
// in percent-encoding of either case.
func TestCutTextEscapes(t *testing.T) {
	aws := "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	uml := "pässwörd-1234"
	amp := `p&ss<w>rd "5678"\x`
	emoji := "key-😀-9876"
	env := map[string]string{"AWS": aws, "UML": uml, "AMP": amp, "EMO": emoji}
	names := []string{"AWS", "UML", "AMP", "EMO"}
	for _, in := range []string{
		aws, strings.ReplaceAll(aws, "/", `\/`), strings.ReplaceAll(aws, "/", `\u002F`),
		uml, `p\u00e4ssw\u00f6rd-1234`, `p\u00E4ssw\u00F6rd-1234`,
		uescape(uml, `\u%04x`), uescape(uml, `\u%04X`),
		`p%C3%A4ssw%C3%B6rd-1234`, `p%c3%a4ssw%c3%b6rd-1234`,
		amp, `p\u0026ss\u003cw\u003erd \"5678\"\\x`, `p&ss<w>rd \"5678\"\\x`,
		`p%26ss%3Cw%3Erd+%225678%22%5Cx`, `p%26ss%3cw%3erd%20%225678%22%5cx`, `p&ss%3Cw%3Erd%20%225678%22%5Cx`,
		`key-\ud83d\ude00-9876`, `key-\uD83D\uDE00-9876`,
		// HTML-escaped, as a web page or an http body shows it.
		`p&amp;ss&lt;w&gt;rd &#34;5678&#34;\x`, `p&amp;ss&lt;w&gt;rd "5678"\x`, `p&amp;ss&lt;w&gt;rd &quot;5678&quot;\x`,
		// A tool's JSON output inside an exec result: escapes escaped.
		`p\\u00e4ssw\\u00f6rd-1234`, strings.ReplaceAll(aws, "/", `\\/`),
	} {
		got := String("before "+in+" after", names, env)
		if !whole.MatchString(got) {
			t.Errorf("cut(%s) = %s", in, got)
		}
	}
}

// whole matches a text whose one secret was cut whole.
var whole = regexp.MustCompile(`^before \[env\.[A-Z]+\] after$`)

// TestCutWrapped cuts base64 and hex forms broken into lines (\n, \r\n,
// or escaped in JSON), as base64 (76 columns) and xxd -p (60) write
// them, also inside a longer encoded text, hex in either case.
func TestCutWrapped(t *testing.T) {
	secret := "k7Zq9xW3mN8pL2vR5tY1uB4cD6eF0gH-jK_sA.oP~iU7yT2rE9wQ3zX8cV1bN5mL4kJ0hG"
	env := map[string]string{"LONG": secret}
	for _, sep := range []string{"\n", "\r\n", `\n`, `\r\n`} {
		for _, pre := range []string{"", "a", "ab", "token="} {
			for _, in := range []string{
				wrap(base64.StdEncoding.EncodeToString([]byte(pre+secret)), 76, sep),
				wrap(base64.URLEncoding.EncodeToString([]byte(pre+secret+"!")), 64, sep),
				wrap(hex.EncodeToString([]byte(pre+secret)), 60, sep),
				wrap(strings.ToUpper(hex.EncodeToString([]byte(pre+secret))), 32, sep),
			} {
				got := String(in, []string{"LONG"}, env)
				if !strings.Contains(got, "[env.LONG]") || len(got) > len(in)-len(secret) {
					t.Errorf("cut(%q) = %q", in, got)
				}
			}
		}
	}
	// A wrapped whole form is cut whole, its line breaks with it.
	in := "b64=" + wrap(base64.StdEncoding.EncodeToString([]byte(secret)), 76, "\n") + "\nend"
	if got := String(in, []string{"LONG"}, env); got != "b64=[env.LONG]\nend" {
		t.Errorf("whole wrapped form: %q", got)
	}
}

// TestCutInJSON cuts a wrapped form inside an encoded exec result and
// leaves it valid JSON.
func TestCutInJSON(t *testing.T) {
	secret := "k7Zq9xW3mN8pL2vR5tY1uB4cD6eF0gH-jK_sA.oP~iU7yT2rE9wQ3zX8cV1bN5mL4kJ0hG"
	out, _ := json.Marshal(map[string]string{"stdout": wrap(base64.StdEncoding.EncodeToString([]byte(secret)), 76, "\n") + "\n"})
	got := String(string(out), []string{"L"}, map[string]string{"L": secret})
	if got != `{"stdout":"[env.L]\n"}` || !json.Valid([]byte(got)) {
		t.Errorf("got %s", got)
	}
}

// TestPrefix keeps the first n bytes of a text with its secrets cut: a
// secret straddling the cut is cut whole, nothing of it left.
func TestPrefix(t *testing.T) {
	secret := "SECRETVALUEABCDEFGHIJ"
	r := New([]string{"E"}, map[string]string{"E": secret})
	if r.Slack() < 6*len(secret) {
		t.Fatalf("slack %d for a %d-byte secret", r.Slack(), len(secret))
	}
	for _, pre := range []int{985, 999, 1000, 1001} {
		in := strings.Repeat("0", pre) + secret + strings.Repeat("1", 50)
		got, cut := r.Prefix(in, 1000)
		if strings.Contains(got, "SECRET") || !cut {
			t.Errorf("prefix %d: %q, cut %v", pre, got[990:], cut)
		}
		if pre < 1000 && !strings.HasSuffix(got, "[env.E]") {
			t.Errorf("prefix %d: %q", pre, got[990:])
		}
	}
	// Secrets cut before the edge do not pull later text in.
	in := strings.Repeat(secret+" ", 100) + strings.Repeat("x", 2000) + secret
	got, _ := r.Prefix(in, len(in)-len(secret)-10)
	if strings.Contains(got, "SECRET") || strings.HasSuffix(got, "[env.E]") {
		t.Errorf("shrinking cuts: %q", got[len(got)-20:])
	}
	if got, cut := r.Prefix("short", 1000); got != "short" || cut {
		t.Errorf("short text: %q %v", got, cut)
	}
}

// TestShortAndLong leaves ordinary text alone: values under 4 bytes are
// not cut, encodings of values under 8 bytes are not; a value too long
// for a pattern is still cut in its exact forms.
func TestShortAndLong(t *testing.T) {
	env := map[string]string{"PIN": "4711", "X": "abc", "BIG": strings.Repeat("Zz9/", 400)}
	if got := String("abc 4711 NDcxMQ== 34373131", []string{"PIN", "X"}, env); got != "abc [env.PIN] NDcxMQ== 34373131" {
		t.Errorf("short secrets: %q", got)
	}
	big := env["BIG"]
	for _, in := range []string{big, base64.StdEncoding.EncodeToString([]byte(big)), hex.EncodeToString([]byte(big)), strings.ReplaceAll(big, "/", "%2F")} {
		if got := String("<"+in+">", []string{"BIG"}, env); got != "<[env.BIG]>" {
			t.Errorf("long secret: %.40q", got)
		}
	}
	var none *Redactor
	if got := none.Cut("text"); got != "text" {
		t.Errorf("nil redactor: %q", got)
	}
}

func BenchmarkNew(b *testing.B) {
	env := map[string]string{"A": "k7Zq9xW3mN8pL2vR5tY1uB4cD6eF0gH-jK_sA.oP~iU7yT2rE9wQ3zX8cV1bN5mL4kJ0hG"}
	for b.Loop() {
		New([]string{"A"}, env)
	}
}

func BenchmarkCut64K(b *testing.B) {
	env := map[string]string{"A": "k7Zq9xW3mN8pL2vR5tY1uB4cD6eF0gH-jK_sA.oP~iU7yT2rE9wQ3zX8cV1bN5mL4kJ0hG"}
	r := New([]string{"A"}, env)
	text := strings.Repeat("some ordinary output line, with words and numbers 12345\n", 64<<10/56)
	for b.Loop() {
		r.Cut(text)
	}
}

// A secret written as HTML writes it, with numeric character references
// (html/template writes + as &#43;) or every character one, is cut; so
// is one split inside a reference across stream pieces (found by an
// attack).
func TestHTMLReferences(t *testing.T) {
	key := "sk-atk+Q9z/Wm3&Lp8<Xr~?>j1"
	env := map[string]string{"K": key}
	var every strings.Builder
	for _, r := range key {
		fmt.Fprintf(&every, "&#%d;", r)
	}
	for _, text := range []string{
		"a sk-atk&#43;Q9z/Wm3&amp;Lp8&lt;Xr~?&gt;j1 b",
		"a sk-atk&#x2B;Q9z/Wm3&amp;Lp8&#60;Xr~?&#x3e;j1 b",
		"a " + every.String() + " b",
	} {
		if got := String(text, []string{"K"}, env); got != "a [env.K] b" {
			t.Errorf("%s: cut to %s", text, got)
		}
		r := New([]string{"K"}, env)
		for cut := 1; cut < len(text); cut++ {
			st := r.Stream()
			out := st.Next(text[:cut]) + st.Next(text[cut:]) + st.End()
			if out != "a [env.K] b" {
				t.Fatalf("%s split at %d: streamed as %s", text, cut, out)
			}
		}
	}
	if got := String("fish &amp; chips &#38; &bogus; &#xZZ;", []string{"K"}, env); got != "fish &amp; chips &#38; &bogus; &#xZZ;" {
		t.Errorf("text without the key changed: %s", got)
	}
}

package toolkits

import "strings"

// Preview is what one call of a tool will do, as its toolkit would do
// it: the declaration's fields rendered with the call's arguments. Every
// environment variable it reads shows as [env.NAME], never its value.
// Fields a toolkit does not use are empty.
type Preview struct {
	Command []string          `json:"command,omitempty"` // exec: the argv
	Env     map[string]string `json:"env,omitempty"`     // exec: what the declaration adds to the environment
	Method  string            `json:"method,omitempty"`  // http
	URL     string            `json:"url,omitempty"`     // http: with its query
	Headers map[string]string `json:"headers,omitempty"` // http: the declared ones
	Body    string            `json:"body,omitempty"`    // http: JSON
	Op      string            `json:"op,omitempty"`      // file: read, write or list
	Root    string            `json:"root,omitempty"`    // file
	Path    string            `json:"path,omitempty"`    // file: relative to Root
	Content string            `json:"content,omitempty"` // file write: what is written
	Text    string            `json:"text,omitempty"`    // output: the result
}

// Previewer is an Action that says what a call would do without doing
// it. Its Preview renders exactly as Do would.
type Previewer interface {
	Preview(c Call) (Preview, error)
}

// PreviewEnv returns the environment a preview renders with: each of
// names as the text [env.NAME].
func PreviewEnv(names []string) map[string]string {
	env := make(map[string]string, len(names))
	for _, n := range names {
		env[n] = "[env." + n + "]"
	}
	return env
}

// Line says the preview's action in one line: a command with its
// arguments quoted as a shell would need them, a method and URL, a file
// operation, or an output's text.
func (p Preview) Line() string {
	switch {
	case p.Command != nil:
		quoted := make([]string, len(p.Command))
		for i, c := range p.Command {
			quoted[i] = ShellQuote(c)
		}
		return strings.Join(quoted, " ")
	case p.Method != "":
		return p.Method + " " + p.URL
	case p.Op != "":
		return "file " + p.Op + " " + p.Root + "/" + p.Path
	}
	return "output " + p.Text
}

// ShellQuote quotes s as a POSIX shell word when it needs it: the
// arguments of a preview's command, the flags of a printed hint.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=@%+-,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

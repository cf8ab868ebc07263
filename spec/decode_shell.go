package spec

import (
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/agentctl/agentctl/spec/tmpl"
)

// shellPlaceholders refuses a placeholder in an argument the command
// runs as code (CodeArgs): the script of a shell started with -c, su -c,
// env -S, ssh's remote command, python -c, a sed script, the program a
// wrapper runs and the like. Once rendered, a value is code there, and
// one holding ; or $(...) runs commands of the model's choosing. Values
// reach such code safely as environment variables or, after a shell's
// script, as positional arguments.
func (d *decoder) shellPlaceholders(f *file, cmd []*yaml.Node, where string) {
	argv := nodeValues(cmd)
	for _, c := range CodeArgs(argv) {
		i := c.Index
		name, src := "VALUE", `${{ input.NAME }}`
		if t, err := tmpl.Parse(argv[i], actionVars, tmpl.AnyEnv); err == nil && len(t.Placeholders()) > 0 {
			src = t.Placeholders()[0]
			name = envNameFor(src)
			src = "${{ " + src + " }}"
		}
		pos := f.offsetPos(cmd[i], strings.Index(argv[i], "${{"))
		switch c.kind {
		case kindShell:
			d.errs.add(pos, "%s[%d]: a placeholder in %s is run as shell code (a value holding ; or $(...) would run commands): pass the value through env and quote it in the script, env: {%s: %q} and \"$%s\" (or use shell: true, which takes values only through env)",
				where, i, c.What, name, src, name)
		case kindSSH:
			d.errs.add(pos, "%s[%d]: ssh hands its remote command to a shell on the host, where a placeholder's value would run as code: run a fixed remote command instead (the remote shell sees none of the tool's env)",
				where, i)
		default:
			fix := strings.NewReplacer("{NAME}", name, "{SRC}", strconv.Quote(src)).Replace(c.Fix)
			d.errs.add(pos, "%s[%d]: a placeholder in %s would run a value as code: %s", where, i, c.What, fix)
		}
	}
}

// optionPlaceholders refuses a placeholder that begins an argument where
// a program parses options (OptionArgs), unless what it reads cannot
// begin with "-" (an enum, a const, a pattern anchored on its first
// character, a minimum of 0, a format such as uri): a value such as
// --output=/etc/x or -e would be an option there. "--" before it, or a
// fixed prefix in the same argument, keeps it an operand.
func (d *decoder) optionPlaceholders(f *file, cmd []*yaml.Node, t *Tool, where string) {
	argv := nodeValues(cmd)
	c := leadCheck{input: docOf(t.Input), resume: docOf(t.ResumeSchema), formats: true}
	for _, o := range OptionArgs(argv) {
		c.strict = o.Dashes
		a := argv[o.Index]
		if c.lead(a, o.Bad) {
			continue
		}
		tm, err := tmpl.Parse(a, actionVars, tmpl.AnyEnv)
		if err != nil || len(tm.Placeholders()) == 0 {
			continue // reported as a placeholder error
		}
		src := "${{ " + tm.Placeholders()[0] + " }}"
		lead, _ := tmpl.Parse(src, actionVars, tmpl.AnyEnv)
		reads := readNames(lead)
		pos := f.offsetPos(cmd[o.Index], strings.Index(a, "${{"))
		if o.Dashes {
			d.errs.add(pos, "%s[%d]: %s names the option in %q, so the model would choose which option of %s it sets: write the option out with the value after it (--name=%s), or constrain %s with an enum or a const",
				where, o.Index, src, a, o.Program, src, reads)
			continue
		}
		what, chars := "--output=/tmp/x or -e", `"-"`
		if o.Bad == "-+" {
			what, chars = "--output=/tmp/x, -e or +cmd", `"-" or "+"`
		}
		d.errs.add(pos, "%s[%d]: %s begins an argument where %s parses options, so a value such as %s would be an option: put \"--\" before it, give it a fixed prefix in the same argument (--name=%s), or constrain %s so that it cannot begin with %s (an enum, a const, or a pattern such as \"^[a-z0-9]\")",
			where, o.Index, src, o.Program, what, src, reads, chars)
	}
}

// readNames names the fields of input and resume t reads, for messages.
func readNames(t *tmpl.String) string {
	var names []string
	for _, v := range []string{"input", "resume"} {
		for _, r := range t.Reads(v) {
			names = append(names, v+"."+r)
		}
	}
	if len(names) == 0 {
		return "what it reads"
	}
	return strings.Join(names, " and ")
}

// nodeValues returns the text of each scalar of a command.
func nodeValues(cmd []*yaml.Node) []string {
	argv := make([]string, len(cmd))
	for i, c := range cmd {
		if c != nil {
			argv[i] = c.Value
		}
	}
	return argv
}

// envNameFor proposes an environment variable name for the value of an
// expression: its last name, in capitals (input.db is DB).
func envNameFor(src string) string {
	end := strings.LastIndexFunc(src, isNameRune) + 1
	start := strings.LastIndexFunc(src[:end], func(r rune) bool { return !isNameRune(r) }) + 1
	name := strings.ToUpper(src[start:end])
	if !isEnvName(name) {
		return "VALUE"
	}
	return name
}

func isNameRune(r rune) bool {
	return r == '_' || r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

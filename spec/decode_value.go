package spec

import (
	"github.com/agentctl/agentctl/internal/duration"
	"github.com/agentctl/agentctl/internal/names"

	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/agentctl/agentctl/spec/tmpl"
)

// templates compiles a map of strings that may hold placeholders.
func (d *decoder) templates(f *file, n *yaml.Node, vars tmpl.Vars) map[string]*tmpl.String {
	out := map[string]*tmpl.String{}
	for k, v := range pairs(n) {
		if v = scalar(v); v != nil {
			out[k.Value] = d.template(f, v, vars)
		}
	}
	return out
}

// size decodes a byte count (see ParseSize); 0 when absent.
func (d *decoder) size(f *file, n *yaml.Node, path string) int64 {
	if n = scalar(n); n == nil {
		return 0
	}
	v, err := ParseSize(n.Value)
	if err != nil {
		d.errs.add(f.pos(n), "%s: %v", path, err)
		return 0
	}
	return v
}

// ParseSize reads a positive byte count: 65536, "64KiB", "1MiB", "10MB".
func ParseSize(text string) (int64, error) {
	s := strings.TrimSpace(text)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000}, {"B", 1}} {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 || v > math.MaxInt64/mult {
		return 0, fmt.Errorf("invalid size %q (want e.g. 65536, 64KiB, 1MiB)", text)
	}
	return v * mult, nil
}

// duration decodes a positive duration such as 30s, 24h or 7d; 0 when
// absent.
func (d *decoder) duration(f *file, n *yaml.Node, path string) time.Duration {
	if n = scalar(n); n == nil || n.Tag != "!!str" {
		return 0 // absent, or of the wrong type: the schema reports it
	}
	dur, err := duration.Parse(n.Value)
	switch {
	case err != nil:
		d.errs.add(f.pos(n), "%s: invalid duration %q (want e.g. 30s, 5m, 1h30m, 7d)", path, n.Value)
	case dur <= 0:
		d.errs.add(f.pos(n), "%s: must be positive", path)
	}
	return dur
}

// condition decodes true, false or one ${{ expression }}; absent is false.
// Unless the spec is trusted, the expression is type-checked with its
// variables typed by schemas (input, resume; see condTypes).
func (d *decoder) condition(f *file, n *yaml.Node, path string, vars tmpl.Vars, schemas map[string]*Schema) tmpl.Expr {
	if n = scalar(n); n == nil {
		return tmpl.Const(false)
	}
	if n.Tag == "!!bool" {
		return tmpl.Const(boolean(n))
	}
	if n.Tag != "!!str" {
		return tmpl.Const(false) // the schema reports it
	}
	if !tmpl.Has(n.Value) {
		if n.Value == "true" || n.Value == "false" {
			d.errs.add(f.pos(n), "%s: %q is a string: write %s without quotes", path, n.Value, n.Value)
			return tmpl.Const(false)
		}
		d.errs.add(f.pos(n), "%s: want true, false or ${{ expression }}, not %q", path, n.Value)
		return tmpl.Const(false)
	}
	e, err := tmpl.ParseExpr(n.Value, vars, d.tmplOpts()...)
	var te *tmpl.Error
	if errors.As(err, &te) && te.Expr == "" && te.Offset == 0 {
		d.errs.add(f.pos(n), "%s: %s", path, te.Msg)
	} else if err != nil {
		d.placeholderError(f, n, err)
	} else if !d.trusted {
		if err := e.Check(condTypes(vars, schemas)); err != nil {
			d.placeholderError(f, n, fmt.Errorf("%s: %w", path, err))
		}
	}
	return e
}

// value compiles a tree of values whose strings may hold placeholders.
func (d *decoder) value(f *file, n *yaml.Node, vars tmpl.Vars) *tmpl.Value {
	v, err := tmpl.ParseValue(f.value(n, d.errs), vars, d.tmplOpts()...)
	if err != nil {
		var pe *tmpl.PathError
		if errors.As(err, &pe) {
			d.placeholderError(f, lookup(n, pe.Path), pe.Err)
		} else {
			d.errs.add(f.pos(n), "%v", err)
		}
		return nil
	}
	return v
}

// template compiles a scalar that may hold placeholders.
func (d *decoder) template(f *file, n *yaml.Node, vars tmpl.Vars) *tmpl.String {
	t, err := tmpl.Parse(n.Value, vars, d.tmplOpts()...)
	if err != nil {
		d.placeholderError(f, n, err)
		return nil
	}
	return t
}

// tmplOpts are the options placeholders compile with: a snapshot that
// Load accepted before env was read only by literal names still compiles
// (tmpl.AnyEnv), so that its runs can be decided.
func (d *decoder) tmplOpts() []tmpl.Option {
	if d.trusted {
		return []tmpl.Option{tmpl.AnyEnv}
	}
	return nil
}

// placeholderError reports an error in the placeholders of scalar n.
func (d *decoder) placeholderError(f *file, n *yaml.Node, err error) {
	var te *tmpl.Error
	if errors.As(err, &te) {
		d.errs.add(f.offsetPos(n, te.Offset), "%v", err)
	} else {
		d.errs.add(f.pos(n), "%v", err)
	}
}

// jsonSchema decodes a JSON Schema written at node n (nil: any object)
// and, unless the spec is trusted, compiles it now to report its errors.
func (d *decoder) jsonSchema(f *file, n *yaml.Node, path string) *Schema {
	doc := map[string]any{"type": "object"}
	if n != nil {
		var ok bool
		if doc, ok = f.value(n, d.errs).(map[string]any); !ok {
			return &Schema{Doc: doc, Pos: f.pos(n)} // the spec schema reports it
		}
	}
	if d.trusted {
		return lazySchema(doc, f.pos(n))
	}
	s := &Schema{Doc: doc, Pos: f.pos(n)}
	if d.compiler == nil {
		d.compiler = jsonschema.NewCompiler()
		d.compiler.AssertFormat()
	}
	d.schemas++
	url := fmt.Sprintf("mem:///%d/%s", d.schemas, path)
	if err := d.compiler.AddResource(url, doc); err != nil {
		d.errs.add(f.pos(n), "%s: invalid JSON Schema: %v", path, err)
		return s
	}
	sch, err := d.compiler.Compile(url)
	if err == nil {
		s.compiled = func() (*jsonschema.Schema, error) { return sch, nil }
		return s
	}
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		d.violations(f, n, path+": invalid JSON Schema", sve.Err)
		return s
	}
	d.errs.add(f.pos(n), "%s: invalid JSON Schema: %s", path, strings.ReplaceAll(err.Error(), url, path))
	return s
}

// violations reports each way a value written at n breaks a schema, at
// the node it concerns, as "what at /pointer: message".
func (d *decoder) violations(f *file, n *yaml.Node, what string, err error) {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		d.errs.add(f.pos(n), "%s: %v", what, err)
		return
	}
	for _, v := range Violations(ve) {
		at := lookup(n, v.Path)
		if v.Key != "" {
			if k := keyNode(at, v.Key); k != nil {
				at = k
			}
		}
		d.errs.add(f.pos(at), "%s at %s: %s", what, v.Pointer(), v.Msg)
	}
}

func str(n *yaml.Node) string {
	if n = scalar(n); n == nil {
		return ""
	}
	return n.Value
}

// approvers reads a list of approvers at path; the schema checks its
// shape, and each name is checked here (names.Check: a spec names users
// and groups in ASCII, whatever a server allows).
func (d *decoder) approvers(f *file, n *yaml.Node, path string) Approvers {
	var a Approvers
	for i, it := range items(n) {
		if it.Kind == yaml.MappingNode {
			if o := d.onCall(f, it, fmt.Sprintf("%s.%d", path, i)); o != nil {
				a.OnCall = append(a.OnCall, o)
			}
			continue
		}
		if it = scalar(it); it == nil || it.Value == "" {
			continue
		}
		g, group := strings.CutPrefix(it.Value, "group:")
		if !d.principal(f, it, fmt.Sprintf("%s.%d", path, i), g, group) {
			continue
		}
		if group {
			a.Groups = append(a.Groups, g)
		} else {
			a.Users = append(a.Users, it.Value)
		}
	}
	return a
}

// principal checks a user or group name written at n, and reports
// whether it passes. A snapshot (Reload) is taken as it was accepted.
func (d *decoder) principal(f *file, n *yaml.Node, path, name string, group bool) bool {
	if d.trusted {
		return true
	}
	err := names.Check(name)
	if err == nil {
		return true
	}
	what := "user"
	if group {
		what = "group"
	}
	d.errs.add(f.pos(n), "%s: %s %q: %v", path, what, name, err)
	return false
}

func boolean(n *yaml.Node) bool {
	var b bool
	if n = scalar(n); n != nil {
		_ = n.Decode(&b) // a wrong type is the schema's to report
	}
	return b
}

// envNames decodes inheritEnv: names of environment variables, each
// checked to be one.
func (d *decoder) envNames(f *file, n *yaml.Node, path string) []string {
	var out []string
	for _, c := range items(n) {
		if c = scalar(c); c == nil {
			continue
		}
		switch {
		case !isEnvName(c.Value):
			d.errs.add(f.pos(c), "%s: %q is not an environment variable name (letters, digits and _, not starting with a digit)", path, c.Value)
			continue
		case BaseEnv(c.Value) || c.Value == "AGENTCTL_RUN_ID" || c.Value == "AGENTCTL_CALL_ID":
			d.errs.add(f.pos(c), "%s: %s is passed already (PATH, HOME, USER, LOGNAME, LANG, LC_*, TZ, TMPDIR and the proxy variables are; AGENTCTL_RUN_ID and AGENTCTL_CALL_ID are set by agentctl): leave it out", path, c.Value)
			continue
		case slices.Contains(out, c.Value):
			d.errs.add(f.pos(c), "%s: %s is named twice", path, c.Value)
			continue
		}
		out = append(out, c.Value)
	}
	return out
}

// isEnvName reports whether s can name an environment variable.
func isEnvName(s string) bool {
	for i, r := range s {
		if r != '_' && !('A' <= r && r <= 'Z') && !('a' <= r && r <= 'z') && (i == 0 || !('0' <= r && r <= '9')) {
			return false
		}
	}
	return s != ""
}

// BaseEnv reports whether a variable of agentctl's environment passes to
// every command agentctl starts (exec tools, stdio MCP servers): what a
// program needs to run as the user, never a credential.
func BaseEnv(name string) bool {
	switch name {
	case "PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR",
		"http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY":
		return true
	}
	return strings.HasPrefix(name, "LC_")
}

// IsEnvName reports whether s can name an environment variable: a
// letter or _, then letters, digits and _.
func IsEnvName(s string) bool { return isEnvName(s) }

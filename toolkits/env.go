package toolkits

import (
	"os"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/spec"
)

// ChildEnv returns the environment a command agentctl starts gets from
// agentctl's own: PATH, HOME, USER, LOGNAME, LANG and LC_*, TZ, TMPDIR,
// the proxy variables, and the variables named in inherit; nothing else
// (no model key, no database URL). The caller adds the declaration's env.
func ChildEnv(inherit []string) []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if spec.BaseEnv(name) || slices.Contains(inherit, name) {
			out = append(out, kv)
		}
	}
	return out
}

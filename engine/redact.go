package engine

import secrets "github.com/agentctl/agentctl/toolkits/redact"

// redact cuts the values of the named environment variables out of a
// tool's result, a description or an error, so that a secret is never
// stored: as it is and in the encodings text carries it in (package
// toolkits/redact). Toolkits that truncate output cut their secrets
// before truncating; this cut holds for every tool whatever it does.
func redact(s string, names []string, env map[string]string) string {
	return secrets.String(s, names, env)
}

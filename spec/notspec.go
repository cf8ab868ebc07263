package spec

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// specKeys are the top-level fields of a spec besides version.
var specKeys = []string{"models", "tools", "agents", "policy"}

// ServerConfigKeys returns the top-level fields of a server configuration
// (agentctl serve --config), by which Load tells one apart from a spec.
// The server's tests keep it equal to its Config.
func ServerConfigKeys() []string {
	return []string{"specs", "listen", "socket", "socketMode", "socketGroup", "db", "tls",
		"readers", "runners", "authors", "approvers", "delegates", "names", "trustProxyHeader",
		"proxyUsers", "limits", "rateLimit", "concurrency", "publicURL", "notify", "slack", "prune", "uploads", "audit"}
}

// notSpec tells what a YAML document is when it is not an agentctl spec,
// from its top-level keys: a server configuration, a Kubernetes manifest,
// a Docker Compose file or other YAML. It returns "" for a document that
// may be a spec: one with version: 1 or a spec field, or that is not a
// mapping (the spec schema reports that).
func notSpec(root *yaml.Node) string {
	if root == nil || root.Kind != yaml.MappingNode {
		return ""
	}
	var keys []string
	for k := range pairs(root) {
		keys = append(keys, k.Value)
	}
	if v := scalar(field(root, "version")); v != nil && v.Value == "1" {
		return ""
	}
	if slices.ContainsFunc(keys, func(k string) bool { return slices.Contains(specKeys, k) }) {
		return ""
	}
	server := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return !slices.Contains(ServerConfigKeys(), k) })
	switch {
	case len(server) > 0:
		return fmt.Sprintf("a server configuration, not a spec (%s are fields of agentctl serve --config FILE)", strings.Join(server, ", "))
	case slices.Contains(keys, "apiVersion") && slices.Contains(keys, "kind"):
		return "a Kubernetes manifest (apiVersion, kind), not an agentctl spec"
	case slices.Contains(keys, "services"):
		return "a Docker Compose file (services), not an agentctl spec"
	}
	if len(keys) > 8 {
		keys = append(keys[:8], "...")
	}
	return fmt.Sprintf("not an agentctl spec: none of its fields (%s) is a spec's", strings.Join(keys, ", "))
}

// notSpecError reports a document notSpec recognised, once, instead of
// an error for each of its fields.
func notSpecError(f *file, what string, errs *Errors) {
	errs.add(f.pos(f.root), "this YAML is %s: a spec has version: 1 and models, tools, agents; keep other YAML out of a spec directory, or pass the spec files with -f FILE", what)
}

package server

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agentctl/agentctl/internal/names"
)

// NamesConfig is names: which user and group names the server takes,
// from every source: its roles, the Slack user map, the proxy's header,
// tokens, "as", and the approvers of its specs (docs/server.md#names).
type NamesConfig struct {
	// Unicode allows names beyond ASCII: letters, marks and digits of
	// one script (names.Profile). A name that looks like another known
	// principal's is then refused.
	Unicode bool `yaml:"unicode"`
}

// NameProfile is the profile names are checked against (names:).
func (c *Config) NameProfile() names.Profile { return names.Profile{Unicode: c.Names.Unicode} }

// checkRoles checks the users and groups of each role and of
// proxyUsers against the name profile and, with Unicode names, against
// each other: a name that looks like another is reported where it is.
func (c *Config) checkRoles(p *checker, root *yaml.Node) {
	for _, role := range []string{"readers", "runners", "authors", "approvers", "delegates", "proxyUsers"} {
		list := find(root, role)
		for i, entry := range c.role(role) {
			name, group := strings.CutPrefix(entry, "group:")
			if group && role == "proxyUsers" {
				name, group = entry, false // OS users, never groups
			}
			c.checkName(p, item(list, i), role, name, group)
		}
	}
}

// checkName checks a name the configuration gives, at node n of key
// (readers, slack.users.U024BE7LH), and adds it to the known names.
func (c *Config) checkName(p *checker, n *yaml.Node, key, name string, group bool) {
	what := "user"
	if group {
		what = "group"
	}
	if err := c.NameProfile().Check(name); err != nil {
		p.add(n, "%s: %s %q: %v", key, what, name, err)
		return
	}
	if !c.Names.Unicode {
		return // ASCII names: no look-alikes to find (names.Known)
	}
	where := key
	if n != nil {
		where = fmt.Sprintf("%s at %s:%d:%d", key, p.file, n.Line, n.Column)
	}
	if err := c.known.Add(name, where); err != nil {
		p.add(n, "%s: %s %q %v", key, what, name, err)
	}
}

package server

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agentctl/agentctl/internal/duration"
	"github.com/agentctl/agentctl/internal/names"
	"github.com/agentctl/agentctl/notify"
	"github.com/agentctl/agentctl/spec"
)

// DefaultConfig is where agentctl serve reads its configuration unless
// --config names another file.
const DefaultConfig = "/etc/agentctl/config.yaml"

// Defaults of the configuration.
const (
	DefaultMaxBody   = 5 << 20 // a spec file (4 MiB) with a run request
	DefaultMaxInput  = 1 << 20 // a run's input, a message, a reason, args, data: as the CLI's AGENTCTL_MAX_INPUT
	DefaultRate      = 20      // requests a second, per identity
	DefaultBurst     = 50      // requests at once, per identity
	DefaultWait      = 30 * time.Second
	DefaultMaxWait   = 5 * time.Minute
	DefaultSocketMod = 0o666
)

// Config is the server's configuration file (docs/server.md).
type Config struct {
	// Specs are the spec files and directories the server runs agents
	// from, relative to the configuration's directory.
	Specs []string `yaml:"specs"`
	// Listen is the TCP address to serve HTTP on; empty: none.
	Listen string `yaml:"listen"`
	// Socket is the Unix socket to serve on; empty: none.
	Socket string `yaml:"socket"`
	// SocketMode is the socket's permission bits, in octal (default
	// 0666: every local user may connect; what each may do comes from
	// the roles).
	SocketMode string `yaml:"socketMode"`
	// SocketGroup is the group the socket file is given.
	SocketGroup string `yaml:"socketGroup"`
	// DB is the database (as --db).
	DB string `yaml:"db"`
	// TLS is the certificate and key to serve HTTPS with.
	TLS TLSConfig `yaml:"tls"`

	// Roles: lists of users and group:NAME.
	Readers   []string `yaml:"readers"`
	Runners   []string `yaml:"runners"`
	Authors   []string `yaml:"authors"`
	Approvers []string `yaml:"approvers"`
	Delegates []string `yaml:"delegates"`
	// Names says which user and group names the server takes
	// (docs/server.md#names).
	Names NamesConfig `yaml:"names"`

	// TrustProxyHeader names the header an authenticating proxy sets,
	// and the addresses it connects from.
	TrustProxyHeader *ProxyHeader `yaml:"trustProxyHeader"`
	// ProxyUsers are the OS users whose connections on the socket may
	// carry the proxy header (a proxy on the same host).
	ProxyUsers []string `yaml:"proxyUsers"`

	// Limits cap requests.
	Limits LimitsConfig `yaml:"limits"`
	// RateLimit caps requests per identity.
	RateLimit RateConfig `yaml:"rateLimit"`
	// Concurrency is how many runs the worker pool advances at once.
	Concurrency int `yaml:"concurrency"`

	// PublicURL is where approvers reach the server (its inbox), for
	// the links in notifications: https://agentctl.example.com.
	PublicURL string `yaml:"publicURL"`
	// Notify are the targets the server notifies of every run's
	// waiting calls, expiries and ends (docs/notifications.md).
	Notify []notify.Target `yaml:"notify"`
	// Slack is the Slack app: messages with buttons, and the decisions
	// their presses make (docs/slack.md); nil: none.
	Slack *SlackConfig `yaml:"slack"`
	// Prune is the retention the server runs on a schedule (agentctl
	// prune's); nil: none.
	Prune *PruneConfig `yaml:"prune"`
	// Uploads is what a spec uploaded with a run may use.
	Uploads UploadsConfig `yaml:"uploads"`
	// Audit signs the audit chain's head (docs/audit.md); nil: unsigned.
	Audit *AuditConfig `yaml:"audit"`

	path      string           // the file read, for messages
	socketMod os.FileMode      // SocketMode parsed
	trusted   []netip.Prefix   // TrustProxyHeader.From parsed
	maxBody   int64            // Limits.MaxBody parsed
	maxInput  int64            // Limits.MaxInput parsed
	wait      [2]time.Duration // Limits.Wait and MaxWait parsed
	known     names.Known      // the names the configuration gives
}

// TLSConfig names a certificate and its key (PEM files).
type TLSConfig struct {
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
}

// ProxyHeader is trustProxyHeader: {header, from}.
type ProxyHeader struct {
	Header string   `yaml:"header"`
	From   []string `yaml:"from"` // CIDRs; loopback ones are refused
}

// LimitsConfig caps requests.
type LimitsConfig struct {
	MaxBody  string `yaml:"maxBody"`  // a size: 5MiB, 512KiB (default 5MiB)
	MaxInput string `yaml:"maxInput"` // each text a request carries: input, text, reason, args, data, output (default 1MiB)
	Wait     string `yaml:"wait"`     // default ?wait= (default 30s)
	MaxWait  string `yaml:"maxWait"`  // the longest ?wait= (default 5m)
}

// RateConfig is a token bucket per identity.
type RateConfig struct {
	PerSecond float64 `yaml:"perSecond"` // default 20
	Burst     int     `yaml:"burst"`     // default 50
}

// ConfigError is every problem found in a configuration file, each at
// file:line:col.
type ConfigError = spec.Errors

// LoadConfig reads a configuration file. Unknown keys, values of the
// wrong type and values that make no sense are reported together, each
// with its file:line:col. Relative paths in it (specs, socket, tls) are
// resolved against the file's directory.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read configuration: %w", err)
	}
	return ParseConfig(path, data)
}

// ParseConfig parses the text of a configuration file read from path.
func ParseConfig(path string, data []byte) (*Config, error) {
	c := &Config{path: path}
	var root yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&root); err != nil && !errors.Is(err, io.EOF) {
		return nil, ConfigError{yamlErr(path, err)}
	}
	var errs ConfigError
	p := &checker{file: path, errs: &errs}
	var top *yaml.Node
	if len(root.Content) > 0 {
		top = root.Content[0]
		// Unknown keys are reported with their columns here, so the
		// decoder need not (it would say the line only).
		p.keys(top, reflect.TypeOf(*c), "")
		if err := top.Decode(c); err != nil {
			errs = append(errs, yamlErr(path, err))
			return nil, errs
		}
	}
	c.check(p, top)
	if len(errs) > 0 {
		slices.SortStableFunc(errs, func(a, b *spec.Error) int {
			return cmp.Or(cmp.Compare(a.Pos.Line, b.Pos.Line), cmp.Compare(a.Pos.Col, b.Pos.Col))
		})
		return nil, errs
	}
	c.resolve(filepath.Dir(path))
	return c, nil
}

// yamlLine finds "line N" in a yaml.v3 message.
var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`line (\d+): (.*)`) })

// yamlErr places a yaml.v3 error at its line.
func yamlErr(path string, err error) *spec.Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n")
	if m := yamlLine().FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return &spec.Error{Pos: spec.Pos{File: path, Line: n}, Msg: strings.TrimSpace(m[2])}
	}
	return &spec.Error{Pos: spec.Pos{File: path}, Msg: strings.TrimSpace(msg)}
}

// checker reports problems of a configuration at their places.
type checker struct {
	file string
	errs *ConfigError
}

func (p *checker) add(n *yaml.Node, format string, args ...any) {
	pos := spec.Pos{File: p.file}
	if n != nil {
		pos.Line, pos.Col = n.Line, n.Column
	}
	*p.errs = append(*p.errs, &spec.Error{Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

// keys reports the keys of mapping n that struct t has no field for,
// recursively.
func (p *checker) keys(n *yaml.Node, t reflect.Type, path string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode {
		for i, it := range n.Content {
			p.keys(it, t.Elem(), fmt.Sprintf("%s[%d].", strings.TrimSuffix(path, "."), i))
		}
		return
	}
	if t.Kind() != reflect.Struct || n.Kind != yaml.MappingNode {
		return
	}
	known := map[string]reflect.Type{}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name != "" && f.IsExported() {
			known[name] = f.Type
			names = append(names, name)
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		ft, ok := known[k.Value]
		if !ok {
			p.add(k, "unknown key %q (known: %s)", path+k.Value, strings.Join(names, ", "))
			continue
		}
		p.keys(v, ft, path+k.Value+".")
	}
}

// find returns the value node at a path of keys under n, or nil.
func find(n *yaml.Node, keys ...string) *yaml.Node {
	for _, k := range keys {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				next = n.Content[i+1]
			}
		}
		n = next
	}
	return n
}

// item returns the i-th element of a sequence node, else n itself.
func item(n *yaml.Node, i int) *yaml.Node {
	if n != nil && n.Kind == yaml.SequenceNode && i < len(n.Content) {
		return n.Content[i]
	}
	return n
}

// check validates values and parses those kept in another form.
func (c *Config) check(p *checker, root *yaml.Node) {
	c.socketMod = DefaultSocketMod
	if c.SocketMode != "" {
		m, err := strconv.ParseUint(strings.TrimPrefix(c.SocketMode, "0o"), 8, 32)
		if err != nil || m > 0o777 {
			p.add(find(root, "socketMode"), "socketMode %q: want octal permission bits such as 0660", c.SocketMode)
		}
		c.socketMod = os.FileMode(m)
	}
	c.checkRoles(p, root)
	if h := c.TrustProxyHeader; h != nil {
		c.checkProxy(p, find(root, "trustProxyHeader"))
	}
	var err error
	c.maxBody = DefaultMaxBody
	if c.Limits.MaxBody != "" {
		if c.maxBody, err = spec.ParseSize(c.Limits.MaxBody); err != nil || c.maxBody <= 0 {
			p.add(find(root, "limits", "maxBody"), "limits.maxBody %q: want a size such as 5MiB", c.Limits.MaxBody)
		}
	}
	c.maxInput = DefaultMaxInput
	if c.Limits.MaxInput != "" {
		if c.maxInput, err = spec.ParseSize(c.Limits.MaxInput); err != nil || c.maxInput <= 0 {
			p.add(find(root, "limits", "maxInput"), "limits.maxInput %q: want a size such as 1MiB", c.Limits.MaxInput)
		}
	}
	c.wait = [2]time.Duration{DefaultWait, DefaultMaxWait}
	for i, v := range []string{c.Limits.Wait, c.Limits.MaxWait} {
		if v == "" {
			continue
		}
		if c.wait[i], err = duration.Parse(v); err != nil || c.wait[i] < 0 {
			p.add(find(root, "limits", []string{"wait", "maxWait"}[i]), "limits: %q: want a duration such as 30s", v)
		}
	}
	if c.RateLimit.PerSecond < 0 || c.RateLimit.Burst < 0 {
		p.add(find(root, "rateLimit"), "rateLimit: perSecond and burst must be 0 (the default) or more")
	}
	if c.Concurrency < 0 {
		p.add(find(root, "concurrency"), "concurrency %d: want 1 or more", c.Concurrency)
	}
	if (c.TLS.Cert == "") != (c.TLS.Key == "") {
		p.add(find(root, "tls"), "tls: give both cert and key")
	}
	c.checkNotify(p, root)
	c.checkSlack(p, root)
	c.checkPrune(p, root)
	c.checkAudit(p, root)
	c.checkUploads(p, root)
}

// checkNotify validates publicURL and the notify: targets.
func (c *Config) checkNotify(p *checker, root *yaml.Node) {
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			p.add(find(root, "publicURL"), "publicURL: want the server's http(s) URL as approvers reach it, without credentials, query or fragment, such as https://agentctl.example.com")
		}
	}
	list := find(root, "notify")
	for i, t := range c.Notify {
		for _, pr := range t.Check() {
			at := item(list, i)
			if pr.Field != "" {
				if x := find(at, strings.Split(pr.Field, ".")...); x != nil {
					at = x
				}
			}
			where := fmt.Sprintf("notify[%d]", i)
			if pr.Field != "" {
				where += "." + pr.Field
			}
			p.add(at, "%s: %s", where, pr.Msg)
		}
	}
}

// checkProxy validates trustProxyHeader: a header name, and source
// networks none of which is loopback (any local user could forge the
// header from there: a proxy on this host uses the socket).
func (c *Config) checkProxy(p *checker, n *yaml.Node) {
	h := c.TrustProxyHeader
	if h.Header == "" {
		p.add(n, "trustProxyHeader: header is required (such as X-Forwarded-User)")
	}
	if strings.EqualFold(h.Header, "Authorization") || strings.EqualFold(h.Header, "Cookie") {
		p.add(find(n, "header"), "trustProxyHeader: header %q cannot carry a user name", h.Header)
	}
	from := find(n, "from")
	if len(h.From) == 0 && len(c.ProxyUsers) == 0 {
		p.add(n, "trustProxyHeader: from is required (the proxy's addresses, as CIDRs), unless the proxy connects to the socket (proxyUsers)")
	}
	for i, cidr := range h.From {
		pfx, err := netip.ParsePrefix(cidr)
		if err != nil {
			if a, aerr := netip.ParseAddr(cidr); aerr == nil {
				pfx, err = a.Prefix(a.BitLen())
			}
		}
		switch {
		case err != nil:
			p.add(item(from, i), "trustProxyHeader.from: %q is not a CIDR such as 10.0.0.0/24", cidr)
			continue
		case pfx.Contains(netip.MustParseAddr("127.0.0.1")) || pfx.Contains(netip.IPv6Loopback()) ||
			pfx.Addr().Is4In6() && pfx.Addr().Unmap().IsLoopback() || pfx.Addr().IsLoopback():
			p.add(item(from, i), "trustProxyHeader.from: %s includes loopback addresses, from which any local user could forge the header; a proxy on this host connects to the socket (proxyUsers)", cidr)
			continue
		}
		c.trusted = append(c.trusted, pfx.Masked())
	}
}

// CheckOwnAddresses refuses trusted proxy networks that hold one of
// own, the host's addresses: a local user connecting to the host's own
// address arrives from it, and could forge the header as from loopback.
func (c *Config) CheckOwnAddresses(own []netip.Addr) error {
	for _, pfx := range c.trusted {
		if a := pfx.Addr(); a.Is4In6() && pfx.Bits() >= 96 { // ::ffff:a.b.c.d/N is a.b.c.d/N-96
			pfx = netip.PrefixFrom(a.Unmap(), pfx.Bits()-96)
		}
		for _, a := range own {
			if a = a.Unmap(); pfx.Contains(a) && !a.IsLoopback() {
				return fmt.Errorf("trustProxyHeader.from: %s includes %s, an address of this host, from which any local user could forge the header; name the proxy's own addresses (such as %s/%d for one)",
					pfx, a, pfx.Addr(), pfx.Addr().BitLen())
			}
		}
	}
	return nil
}

// role returns a role's list by its key.
func (c *Config) role(key string) []string {
	switch key {
	case "readers":
		return c.Readers
	case "runners":
		return c.Runners
	case "authors":
		return c.Authors
	case "approvers":
		return c.Approvers
	case "delegates":
		return c.Delegates
	case "proxyUsers":
		return c.ProxyUsers
	}
	return nil
}

// resolve makes relative paths relative to dir.
func (c *Config) resolve(dir string) {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	for i, s := range c.Specs {
		c.Specs[i] = abs(s)
	}
	c.Socket, c.TLS.Cert, c.TLS.Key = abs(c.Socket), abs(c.TLS.Cert), abs(c.TLS.Key)
}

// SocketFileMode is socketMode parsed (default 0666).
func (c *Config) SocketFileMode() os.FileMode { return c.socketMod }

// Path is the file the configuration was read from.
func (c *Config) Path() string { return c.path }

// trustedProxy reports whether addr is one the proxy header is taken
// from.
func (c *Config) trustedProxy(addr netip.Addr) bool {
	addr = addr.Unmap()
	return slices.ContainsFunc(c.trusted, func(p netip.Prefix) bool { return p.Contains(addr) })
}

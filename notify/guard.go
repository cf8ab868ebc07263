package notify

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// ErrPrivateAddress matches the error of a webhook or a Slack incoming
// webhook that would connect to a loopback, link-local, private or other
// internal address (an *AddressError) while its target does not say
// allowPrivate: true. Such a failure is permanent.
var ErrPrivateAddress = errors.New("private address refused")

// AddressError is a connection refused before it was made: Addr, the
// address the host's name resolved to (or the literal one), is Kind.
type AddressError struct {
	Addr netip.Addr
	Kind string // "a loopback address", "a link-local address", ...
}

// Error says the address and its kind.
func (e *AddressError) Error() string {
	if !e.Addr.IsValid() {
		return "the address connected to is " + e.Kind
	}
	return e.Addr.String() + " is " + e.Kind
}

// Is reports whether target is ErrPrivateAddress.
func (e *AddressError) Is(target error) bool { return target == ErrPrivateAddress }

// Internal prefixes net/netip's predicates do not name.
var (
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")       // "this network": 0.x reaches the host itself on Linux
	sharedSpace = netip.MustParsePrefix("100.64.0.0/10")   // carrier-grade NAT, often a cloud's internal network
	ietfSpace   = netip.MustParsePrefix("192.0.0.0/24")    // IETF protocol assignments
	benchSpace  = netip.MustParsePrefix("198.18.0.0/15")   // network benchmarking
	reserved4   = netip.MustParsePrefix("240.0.0.0/4")     // reserved, and the broadcast address
	compat6     = netip.MustParsePrefix("::/96")           // IPv4-compatible IPv6 (deprecated)
	siteLocal6  = netip.MustParsePrefix("fec0::/10")       // site-local IPv6 (deprecated)
	nat64       = netip.MustParsePrefix("64:ff9b::/96")    // NAT64: an IPv4 address in the last 32 bits
	nat64Local  = netip.MustParsePrefix("64:ff9b:1::/48")  // local-use NAT64
	sixToFour   = netip.MustParsePrefix("2002::/16")       // 6to4: an IPv4 address in bits 16 to 48
	teredo      = netip.MustParsePrefix("2001::/32")       // Teredo tunnels
	orchid      = netip.MustParsePrefix("2001:10::/28")    // ORCHID, not routable
	documentIP6 = netip.MustParsePrefix("2001:db8::/32")   // documentation
	discardIP6  = netip.MustParsePrefix("100::/64")        // discard-only
	translated6 = netip.MustParsePrefix("::ffff:0:0:0/96") // IPv4-translated (SIIT)
)

// AddressKind returns what kind of internal address a is ("a loopback
// address", "a link-local address", ...), or "" for an address a webhook
// may connect to without allowPrivate. Refused: unspecified (0.0.0.0,
// ::), loopback, link-local (169.254.0.0/16, where clouds serve instance
// metadata, and fe80::/10), private (RFC 1918, fc00::/7), carrier-grade
// NAT (100.64.0.0/10), multicast, 0.0.0.0/8, 192.0.0.0/24,
// 198.18.0.0/15, 240.0.0.0/4 and the broadcast address; deprecated and
// special-purpose IPv6 (::/96, fec0::/10, 2001:10::/28, 2001:db8::/32,
// 100::/64), Teredo (2001::/32) and local-use NAT64 (64:ff9b:1::/48).
// An IPv4-mapped address (::ffff:127.0.0.1), and IPv6 that translates
// to IPv4 (NAT64 64:ff9b::/96, SIIT ::ffff:0:0:0/96, 6to4 2002::/16),
// is judged as its IPv4 address. An invalid one is refused.
func AddressKind(a netip.Addr) string {
	a = a.WithZone("").Unmap()
	switch {
	case !a.IsValid():
		return "no valid address"
	case a.IsUnspecified():
		return "an unspecified address"
	case a.IsLoopback():
		return "a loopback address"
	case a.IsLinkLocalUnicast():
		return "a link-local address"
	case a.IsMulticast():
		return "a multicast address"
	case a.IsPrivate():
		return "a private address"
	case sharedSpace.Contains(a):
		return "a carrier-grade NAT address"
	case a.Is4():
		return kind4(a)
	}
	return kind6(a)
}

// kind4 returns AddressKind of the IPv4 addresses net/netip does not
// classify.
func kind4(a netip.Addr) string {
	switch {
	case thisNetwork.Contains(a):
		return "an address of \"this network\" (0.0.0.0/8)"
	case ietfSpace.Contains(a), benchSpace.Contains(a):
		return "a special-purpose address"
	case reserved4.Contains(a):
		return "a reserved or broadcast address"
	}
	return ""
}

// kind6 returns AddressKind of the IPv6 addresses net/netip does not
// classify: deprecated and special-purpose ones, and those that reach
// an IPv4 address, judged as that address.
func kind6(a netip.Addr) string {
	b := a.As16()
	switch {
	case compat6.Contains(a), siteLocal6.Contains(a), orchid.Contains(a), documentIP6.Contains(a), discardIP6.Contains(a):
		return "a special-purpose IPv6 address"
	case teredo.Contains(a):
		return "a Teredo tunnel address"
	case nat64.Contains(a):
		return embedded(netip.AddrFrom4([4]byte(b[12:16])), "NAT64")
	case translated6.Contains(a):
		return embedded(netip.AddrFrom4([4]byte(b[12:16])), "IPv4-translated")
	case nat64Local.Contains(a):
		return "a local-use NAT64 address"
	case sixToFour.Contains(a):
		return embedded(netip.AddrFrom4([4]byte(b[2:6])), "6to4")
	}
	return ""
}

// embedded judges an IPv6 address that reaches v4 through how.
func embedded(v4 netip.Addr, how string) string {
	if k := AddressKind(v4); k != "" {
		return "a " + how + " address of " + v4.String() + ", " + k
	}
	return ""
}

// checkAddress is a net.Dialer's ControlContext: it refuses a
// connection to an internal address (AddressKind) with an
// *AddressError, after the name was resolved and before the connection
// is made, whichever address a name resolves to, each time.
func checkAddress(_ context.Context, _, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &AddressError{Kind: "not one this check can read"}
	}
	if k := AddressKind(ap.Addr()); k != "" {
		return &AddressError{Addr: ap.Addr().WithZone(""), Kind: k}
	}
	return nil
}

// guardedClient returns the client of one attempt of a webhook or a
// Slack incoming webhook: no proxy (HTTP_PROXY and HTTPS_PROXY are not
// read: a proxy would connect where this process does not look), no
// connection kept after the attempt, and, unless allowPrivate, every
// connection checked by checkAddress at connect time. resolver is nil
// but in tests.
func guardedClient(allowPrivate bool, resolver *net.Resolver) *http.Client {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Resolver: resolver}
	if !allowPrivate {
		d.ControlContext = checkAddress
	}
	return &http.Client{Transport: &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableKeepAlives:     true,
	}}
}

// HostKind returns the kind of internal address (AddressKind) a URL's
// host (u.Hostname()) names literally, an IP address or localhost, and
// "" for any other name: a name's addresses are only known once it is
// resolved, which the dialer checks.
func HostKind(host string) string {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return "a loopback address"
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return ""
	}
	return AddressKind(a)
}

package notify

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestAddressKind(t *testing.T) {
	refused := []string{
		"127.0.0.1", "127.255.0.9", "::1", "::ffff:127.0.0.1", "0.0.0.0", "::", "0.1.2.3",
		"169.254.169.254", "::ffff:169.254.169.254", "fe80::1", "fe80::1%eth0",
		"10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1", "::ffff:10.1.2.3", "fc00::1", "fd12:3456::1",
		"100.64.0.1", "100.127.255.255", "224.0.0.1", "239.255.255.250", "ff02::1", "ff05::2",
		"255.255.255.255", "240.0.0.1", "192.0.0.8", "198.18.0.1", "fec0::1", "::127.0.0.1", "::10.0.0.1",
		"64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b:1::1", "2002:7f00:1::1", "2002:a00:1::", "2001::1", "::ffff:0:7f00:1",
		"2001:db8::1", "100::1",
	}
	for _, s := range refused {
		if k := AddressKind(netip.MustParseAddr(s)); k == "" {
			t.Errorf("AddressKind(%s) = \"\", want it refused", s)
		}
	}
	allowed := []string{
		"8.8.8.8", "1.1.1.1", "203.0.113.9", "172.32.0.1", "100.128.0.1", "169.255.0.1", "192.0.1.1", "11.0.0.1",
		"2606:4700:4700::1111", "2a00:1450:4001::200e", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1",
	}
	for _, s := range allowed {
		if k := AddressKind(netip.MustParseAddr(s)); k != "" {
			t.Errorf("AddressKind(%s) = %q, want it allowed", s, k)
		}
	}
	for s, want := range map[string]string{
		"169.254.169.254":  "a link-local address",
		"::ffff:127.0.0.1": "a loopback address",
		"10.0.0.1":         "a private address",
		"100.64.0.1":       "a carrier-grade NAT address",
		"0.0.0.0":          "an unspecified address",
		"64:ff9b::a00:1":   "a NAT64 address of 10.0.0.1, a private address",
	} {
		if k := AddressKind(netip.MustParseAddr(s)); k != want {
			t.Errorf("AddressKind(%s) = %q, want %q", s, k, want)
		}
	}
	if k := AddressKind(netip.Addr{}); k == "" {
		t.Error("the zero Addr is allowed")
	}
}

func TestHostKind(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "::1": true, "localhost": true, "LOCALHOST.": true, "api.localhost": true,
		"169.254.169.254": true, "10.1.2.3": true, "fd00::7": true,
		"hooks.example.com": false, "8.8.8.8": false, "localhost.example.com": false, "": false,
	} {
		if got := HostKind(host) != ""; got != want {
			t.Errorf("HostKind(%q) refused = %v, want %v", host, got, want)
		}
	}
}

// counted is a receiver that answers 204 and counts its requests.
func counted(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestSendRefusesPrivate: with no client given, a webhook or Slack URL
// whose host is (or resolves to) an internal address fails for good,
// saying which address and how to allow it, and nothing connects; with
// AllowPrivate the same URL is delivered.
func TestSendRefusesPrivate(t *testing.T) {
	srv, got := counted(t)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	at := func(host string) string { return "http://" + net.JoinHostPort(host, strconv.Itoa(port)) + "/hook" }
	reachable := []string{"127.0.0.1", "localhost", "::ffff:127.0.0.1", "0.0.0.0"}
	unreachable := []string{"169.254.169.254", "10.0.0.1", "100.64.0.1", "fd00::1", "fe80::1%25lo", "::1", "224.0.0.1"}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, host := range append(reachable, unreachable...) {
		u := at(host)
		sends := map[string]func(allow bool) error{
			"webhook": func(allow bool) error {
				return Webhook{URL: u, Key: specKey(t), AllowPrivate: allow}.Send(ctx, sampleApproval(), time.Now())
			},
			"slack": func(allow bool) error { return Slack{URL: u, AllowPrivate: allow}.Send(ctx, sampleApproval()) },
		}
		for kind, send := range sends {
			err := send(false)
			var se *SendError
			if !errors.As(err, &se) || !se.Permanent || !errors.Is(err, ErrPrivateAddress) || !errors.Is(err, ErrPermanent) {
				t.Errorf("%s %s: err = %v, want a permanent refusal", kind, host, err)
				continue
			}
			if !strings.Contains(err.Error(), ": refused: ") || !strings.HasSuffix(err.Error(), "; set allowPrivate: true beside webhook: (not inside it) to allow it") {
				t.Errorf("%s %s: error = %q", kind, host, err)
			}
		}
	}
	if n := got.Load(); n != 0 {
		t.Fatalf("the receiver got %d requests from refused targets", n)
	}
	if err := (Webhook{URL: at("169.254.169.254"), Key: specKey(t)}).Send(ctx, sampleApproval(), time.Now()); !strings.HasSuffix(err.Error(),
		": refused: 169.254.169.254 is a link-local address; set allowPrivate: true beside webhook: (not inside it) to allow it") {
		t.Errorf("error = %q", err)
	}
	for _, host := range reachable {
		if err := (Webhook{URL: at(host), Key: specKey(t), AllowPrivate: true}).Send(ctx, sampleApproval(), time.Now()); err != nil {
			t.Errorf("webhook %s with AllowPrivate: %v", host, err)
		}
		if err := (Slack{URL: at(host), AllowPrivate: true}).Send(ctx, sampleApproval()); err != nil {
			t.Errorf("slack %s with AllowPrivate: %v", host, err)
		}
	}
	if n, want := got.Load(), int32(2*len(reachable)); n != want {
		t.Errorf("the receiver got %d requests, want %d", n, want)
	}
}

// fakeDNS is a resolver that answers from names: a name's address (A or
// AAAA, as its family), or no such name. It speaks DNS over a pipe.
func fakeDNS(names map[string]netip.Addr) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		client, server := net.Pipe()
		go answerDNS(server, names)
		return client, nil
	}}
}

// answerDNS answers one query in DNS's TCP framing (a two-byte length).
func answerDNS(c net.Conn, names map[string]netip.Addr) {
	defer c.Close()
	var size [2]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return
	}
	q := make([]byte, binary.BigEndian.Uint16(size[:]))
	if _, err := io.ReadFull(c, q); err != nil || len(q) < 17 {
		return
	}
	var labels []string
	i := 12
	for i < len(q) && q[i] != 0 && i+1+int(q[i]) < len(q) {
		labels = append(labels, string(q[i+1:i+1+int(q[i])]))
		i += 1 + int(q[i])
	}
	if i+5 > len(q) {
		return
	}
	qtype := binary.BigEndian.Uint16(q[i+1 : i+3])
	a, known := names[strings.ToLower(strings.Join(labels, "."))]
	resp := append([]byte{q[0], q[1], 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0}, q[12:i+5]...)
	switch {
	case !known:
		resp[3] = 0x83 // no such name
	case qtype == 1 && a.Is4() || qtype == 28 && a.Is6():
		resp[7] = 1
		resp = append(resp, 0xc0, 12, byte(qtype>>8), byte(qtype), 0, 1, 0, 0, 0, 60, 0, byte(a.BitLen()/8))
		resp = append(resp, a.AsSlice()...)
	}
	binary.BigEndian.PutUint16(size[:], uint16(len(resp)))
	_, _ = c.Write(append(size[:], resp...))
}

// TestResolvedAddressRefused: a public-looking name that resolves to
// loopback is refused at connect time, by the address it resolved to;
// allowed, the same name reaches the receiver, with no proxy on the way
// even when the environment names one.
func TestResolvedAddressRefused(t *testing.T) {
	srv, got := counted(t)
	var proxied atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer proxy.Close()
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("HTTPS_PROXY", proxy.URL)
	if tr := guardedClient(false, nil).Transport.(*http.Transport); tr.Proxy != nil {
		t.Fatal("the guarded client uses a proxy")
	}
	dns := fakeDNS(map[string]netip.Addr{"hooks.example.com": netip.MustParseAddr("127.0.0.1")})
	u := "http://hooks.example.com:" + srv.URL[strings.LastIndex(srv.URL, ":")+1:] + "/hook"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := Webhook{URL: u, Key: specKey(t), Client: guardedClient(false, dns)}.Send(ctx, sampleApproval(), time.Now())
	if !errors.Is(err, ErrPrivateAddress) || !errors.Is(err, ErrPermanent) ||
		!strings.Contains(err.Error(), "webhook http://hooks.example.com:") || !strings.Contains(err.Error(), "refused: 127.0.0.1 is a loopback address") {
		t.Fatalf("err = %v", err)
	}
	if n := got.Load(); n != 0 {
		t.Fatalf("the receiver got %d requests", n)
	}
	if err := (Webhook{URL: u, Key: specKey(t), Client: guardedClient(true, dns)}).Send(ctx, sampleApproval(), time.Now()); err != nil {
		t.Fatalf("allowed: %v", err)
	}
	if n, p := got.Load(), proxied.Load(); n != 1 || p != 0 {
		t.Fatalf("the receiver got %d requests, the proxy %d; want 1 and 0", n, p)
	}
}

// TestRedirectToMetadataNotFollowed: a target allowed internal addresses
// that redirects to the metadata address fails for good, naming it,
// and the redirect is not followed.
func TestRedirectToMetadataNotFollowed(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/iam/security-credentials/", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	for _, send := range []func() error{
		func() error {
			return Webhook{URL: srv.URL + "/hook", Key: specKey(t), AllowPrivate: true}.Send(context.Background(), sampleApproval(), time.Now())
		},
		func() error {
			return Slack{URL: srv.URL + "/hook", AllowPrivate: true}.Send(context.Background(), sampleApproval())
		},
	} {
		err := send()
		if !errors.Is(err, ErrPermanent) || !strings.Contains(err.Error(), "a redirect to 169.254.169.254: redirects are not followed") {
			t.Errorf("err = %v", err)
		}
	}
	if got := n.Load(); got != 2 {
		t.Errorf("%d requests, want 2", got)
	}
}

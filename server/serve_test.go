package server

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// Serve wraps TCP listeners in TLS, and returns once stop is closed,
// having stopped taking requests.
func TestServeTLSAndStop(t *testing.T) {
	e := newEnv(t, testRoles)
	certs := httptest.NewTLSServer(http.NotFoundHandler()) // a certificate and a client that trusts it
	defer certs.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- e.srv.Serve(context.Background(), []net.Listener{ln}, certs.TLS.Clone(), stop, time.Second)
	}()
	url := "https://" + ln.Addr().String()
	resp, err := certs.Client().Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil {
		t.Fatalf("healthz over TLS: %d %v", resp.StatusCode, resp.TLS)
	}
	if resp, err := http.Get("http://" + ln.Addr().String() + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("plain HTTP served on a TLS listener")
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if !e.srv.stopping() {
		t.Fatal("not stopping after stop")
	}
	if _, err := certs.Client().Get(url + "/healthz"); err == nil {
		t.Fatal("still serving after stop")
	}
}

// A trusted proxy network that holds one of the host's own addresses is
// refused: a local user connecting to that address would arrive from it.
func TestCheckOwnAddresses(t *testing.T) {
	cfg, err := ParseConfig("c.yaml", []byte("trustProxyHeader: {header: X-Forwarded-User, from: [10.0.4.0/24, 192.0.2.7]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	own := []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::ffff:10.0.4.20")}
	err = cfg.CheckOwnAddresses(own)
	if err == nil || !strings.Contains(err.Error(), "10.0.4.0/24 includes 10.0.4.20, an address of this host") {
		t.Fatalf("a network with the host's address: %v", err)
	}
	mapped, err := ParseConfig("c.yaml", []byte("trustProxyHeader: {header: X-Forwarded-User, from: [\"::ffff:10.0.4.20/128\"]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := mapped.CheckOwnAddresses(own); err == nil {
		t.Fatal("the host's address written as IPv4-mapped IPv6 passes")
	}
	if err := cfg.CheckOwnAddresses([]netip.Addr{netip.MustParseAddr("10.0.5.1"), netip.MustParseAddr("127.0.0.1")}); err != nil {
		t.Fatalf("networks without the host's addresses: %v", err)
	}
}

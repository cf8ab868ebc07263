package server

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
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

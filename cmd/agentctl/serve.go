package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/model"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/backend"
	"github.com/agentctl/agentctl/internal/health"
	"github.com/agentctl/agentctl/server"
	"github.com/agentctl/agentctl/server/metrics"
	"github.com/agentctl/agentctl/server/sse"
	"github.com/agentctl/agentctl/server/web"
	"github.com/agentctl/agentctl/spec"
)

const serveHelp = `Serve owns the database and serves agentctl's JSON HTTP API under /v1:
approvers, bots and the CLI (--server) decide from anywhere, and identity
and the approver policy are enforced here, not in each caller's process.
It advances runs with the engine's worker pool, as agentctl worker does,
shows approvers a browser inbox at / (sign in with a token;
docs/inbox.md), and delivers the notifications of its configuration's
notify: targets and of the runs' own (docs/notifications.md).

Callers are identified by the Unix socket's peer (its OS user, from the
kernel), by a bearer token (agentctl token create), or by the header of a
trusted authenticating proxy. What each may do comes from the roles of
the configuration (readers, runners, authors, approvers, delegates);
docs/server.md describes every key.

To try it, serve --dev -f SPEC serves the spec on loopback with no
configuration, the OS user who runs it in every role, and prints the
inbox's address and a token to sign in with.

Plain HTTP is served on loopback only, unless --insecure-listen is given
(behind a TLS-terminating proxy); give --tls-cert and --tls-key for HTTPS.
SIGHUP reloads the specs (a broken reload keeps the old ones); SIGTERM or
Ctrl-C stops taking requests and work, lets the tool in flight finish for
up to --grace, and releases the runs it holds.`

type serveFlags struct {
	config, listen, socket string
	tlsCert, tlsKey        string
	insecure               bool
	concurrency            int
	readyFile              string
	dev                    bool
	files                  []string
}

func (a *app) serveCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve [--config FILE] [--listen ADDR] [--socket PATH]",
		Short: "Own the database and serve the HTTP API (approvals from anywhere)",
		Long:  serveHelp,
		Example: `  agentctl serve --dev -f examples/agents/oncall.yaml
  agentctl serve --config /etc/agentctl/config.yaml
  agentctl serve --config ops.yaml --listen 127.0.0.1:8080 --socket /run/agentctl/agentctl.sock
  agentctl serve --config ops.yaml --listen :8443 --tls-cert cert.pem --tls-key key.pem`,
		Args: argsCheck(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			gcForLongRunning()
			flagged := func(name string) bool { return cmd.Flags().Changed(name) }
			return a.serve(cmd.Context(), f, flagged)
		},
	}
	cmd.Flags().StringVar(&f.config, "config", "", "configuration `FILE` (default "+server.DefaultConfig+")")
	cmd.Flags().StringVar(&f.listen, "listen", "", "serve HTTP on `ADDR` (host:port; port 0 picks one)")
	cmd.Flags().StringVar(&f.socket, "socket", "", "serve on the Unix socket `PATH`")
	cmd.Flags().StringVar(&f.tlsCert, "tls-cert", "", "serve HTTPS with this certificate (PEM `FILE`)")
	cmd.Flags().StringVar(&f.tlsKey, "tls-key", "", "the certificate's key (PEM `FILE`)")
	cmd.Flags().BoolVar(&f.insecure, "insecure-listen", false, "allow plain HTTP on an address other than loopback (behind a TLS-terminating proxy)")
	cmd.Flags().IntVar(&f.concurrency, "concurrency", 0, "advance up to `N` runs at once in the worker pool (default 4)")
	cmd.Flags().StringVar(&f.readyFile, "ready-file", "", "once serving, write the base URL to `FILE` (atomically)")
	cmd.Flags().BoolVar(&f.dev, "dev", false, "try it out: serve the -f specs on loopback, you in every role, no configuration; prints the inbox and a token")
	cmd.Flags().StringArrayVarP(&f.files, "file", "f", nil, "with --dev: a spec file or directory to serve (repeatable)")
	return cmd
}

// serveConfig reads the configuration and applies the flags over it.
func serveConfig(f serveFlags, flagged func(string) bool, warn io.Writer) (*server.Config, error) {
	if f.dev {
		return devConfig(f, flagged)
	}
	if len(f.files) > 0 {
		return nil, usageErr(errors.New("serve takes -f with --dev only: name the specs in the configuration (specs:)"))
	}
	path := f.config
	if path == "" {
		path = server.DefaultConfig
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, usageErr(fmt.Errorf("serve: no configuration at %s: pass --config FILE", path))
		}
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o022 != 0 {
		fmt.Fprintf(warn, "note: %s is writable by others (%s): whoever can write it grants roles\n", path, fi.Mode().Perm())
	}
	cfg, err := server.LoadConfig(path)
	var se spec.Errors
	switch {
	case errors.As(err, &se):
		return nil, inputErr(fmt.Errorf("configuration is invalid (%d %s):\n%s", len(se), plural(len(se), "error", "errors"), se.Error()))
	case err != nil:
		return nil, inputErr(err)
	}
	if flagged("listen") {
		cfg.Listen = f.listen
	}
	if flagged("socket") {
		cfg.Socket = f.socket
	}
	if flagged("tls-cert") || flagged("tls-key") {
		cfg.TLS = server.TLSConfig{Cert: f.tlsCert, Key: f.tlsKey}
	}
	if (cfg.TLS.Cert == "") != (cfg.TLS.Key == "") {
		return nil, usageErr(errors.New("serve: give both --tls-cert and --tls-key"))
	}
	if flagged("concurrency") {
		if f.concurrency < 1 {
			return nil, usageErr(fmt.Errorf("--concurrency %d: want 1 or more", f.concurrency))
		}
		cfg.Concurrency = f.concurrency
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 4
	}
	if cfg.Listen == "" && cfg.Socket == "" {
		return nil, usageErr(errors.New("serve: nothing to serve on: set listen or socket in the configuration, or pass --listen or --socket"))
	}
	if err := cfg.CheckOwnAddresses(hostAddrs()); err != nil {
		return nil, inputErr(fmt.Errorf("%s: %w", path, err))
	}
	if err := server.CheckListen(cfg.Listen, cfg.TLS.Cert != "", f.insecure); err != nil {
		return nil, inputErr(fmt.Errorf("%w; serve HTTPS (--tls-cert, --tls-key), or pass --insecure-listen behind a TLS-terminating proxy", err))
	}
	return cfg, nil
}

// noteOpenDB says when others than the server's user may read or write
// the SQLite database at path, or replace it: the server is the trust
// boundary only if it alone can.
func noteOpenDB(w io.Writer, path string) {
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		fmt.Fprintf(w, "note: the database %s may be read or written by others (%s): whoever can read it reads every run, whoever can write it forges decisions; chmod 600 it (and its -wal, -shm) for the server's user alone\n", path, fi.Mode().Perm())
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm()&0o002 != 0 && fi.Mode()&os.ModeSticky == 0 {
		fmt.Fprintf(w, "note: the database's directory %s is writable by others (%s): whoever can write it replaces the database; make it the server's user's alone\n", dir, fi.Mode().Perm())
	}
}

// hostAddrs lists the addresses of this host's interfaces.
func hostAddrs() []netip.Addr {
	addrs, _ := net.InterfaceAddrs()
	var out []netip.Addr
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, ip)
			}
		}
	}
	return out
}

// serve runs the server until a signal stops it.
func (a *app) serve(ctx context.Context, f serveFlags, flagged func(string) bool) error {
	cfg, err := serveConfig(f, flagged, a.stderr)
	if err != nil {
		return err
	}
	sa, err := slackAppOf(cfg)
	if err != nil {
		return err
	}
	signing, err := serveSigning(cfg) // audit: signingKey (audit_sign.go)
	if err != nil {
		return err
	}
	// Bound first: a port taken or a socket refused is said as such, and
	// leaves no database created.
	lns, base, tlsCfg, err := serveListeners(cfg)
	if err != nil {
		return err
	}
	if f.dev {
		cfg.PublicURL = base[0] // the links in notifications
	}
	served := false
	defer func() {
		if !served {
			for _, l := range lns {
				l.Close()
			}
		}
	}()
	log := a.serveLog(f.dev)
	if a.dbPath == "" {
		a.dbPath = cfg.DB
	}
	db, err := a.store(ctx)
	if err != nil {
		return err
	}
	if path, err := dbPath(a.dbPath); err == nil && !backend.IsPostgres(path) {
		noteOpenDB(a.stderr, path)
	}
	ss, ok := any(db).(store.ServerStore)
	if !ok {
		return fmt.Errorf("serve: this build's store does not serve (no tokens, feed or inbox)")
	}
	loops := &health.Loops{}
	m := metrics.New(metrics.Options{Stats: ss.Stats, Loops: loops})
	ecfg, err := a.traced(ctx, engine.Config{Models: model.Default(), Limits: a.limits.engineLimits(), Stop: a.stop, Observer: m,
		Names: cfg.NameProfile()})
	if err != nil {
		return err
	}
	e := engine.New(db, ecfg)
	a.addEngine(e)
	specs := server.NewSpecs(cfg.Specs, a.limits.spec, cfg.CheckSecrets(e.Compile))
	if err := specs.Load(log); err != nil {
		return inputErr(fmt.Errorf("serve: the specs do not load (see the log above): %w", err))
	}
	events, woken, err := a.serveEvents(ctx, ss, loops)
	if err != nil {
		return err
	}
	srv, err := server.New(server.Options{Store: ss, Engine: e, Config: cfg, Specs: specs, Log: log, Work: ctx,
		Metrics: m.Handler(), ObserveHTTP: m.ObserveHTTP, OpenAPI: api.OpenAPI(), Events: events, UI: web.New,
		Slack: sa.handler(cfg, ss, log), Loops: loops})
	if err != nil {
		return err
	}
	// The outboxes first: their cursors are set before the pool or a
	// request commits anything they should queue.
	outboxes := a.serveOutboxes(ctx, ss, e, cfg, log, woken)
	defer outboxes()
	poolDone, err := a.servePool(ctx, e, cfg, log, loops)
	if err != nil {
		return err
	}
	defer startSigning(ctx, db, signing, "serve", log)() // after the pool: the last head at shutdown
	defer a.watchReload(specs, log)()
	if err := a.announce(ctx, f, ss, base); err != nil {
		return err
	}
	served = true
	err = srv.Serve(ctx, lns, tlsCfg, a.stop, a.grace)
	<-poolDone
	outboxes()
	return err
}

// announce says where the server serves: on stderr, in --ready-file,
// and with --dev, the inbox and a token on stdout.
func (a *app) announce(ctx context.Context, f serveFlags, ss store.ServerStore, base []string) error {
	if f.dev {
		if err := a.devWelcome(ctx, ss, base[0]); err != nil {
			return err
		}
	}
	fmt.Fprintf(a.stderr, "agentctl: serving %s\n", strings.Join(base, " and "))
	if f.readyFile != "" {
		return writeAtomic(f.readyFile, base[0]+"\n")
	}
	return nil
}

// serveListeners loads the TLS certificate, if any, and opens the
// listeners.
func serveListeners(cfg *server.Config) ([]net.Listener, []string, *tls.Config, error) {
	var tlsCfg *tls.Config
	if cfg.TLS.Cert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLS.Cert, cfg.TLS.Key)
		if err != nil {
			return nil, nil, nil, inputErr(fmt.Errorf("serve: TLS: %w", err))
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	lns, base, err := listeners(cfg, tlsCfg != nil)
	return lns, base, tlsCfg, err
}

// listeners opens the TCP address and the socket the configuration
// names, and returns their base URLs.
func listeners(cfg *server.Config, https bool) ([]net.Listener, []string, error) {
	var lns []net.Listener
	var base []string
	if cfg.Listen != "" {
		ln, err := net.Listen("tcp", cfg.Listen)
		if err != nil {
			// %v, not %w: a network error of the listener is no
			// database's, which the store would take it for.
			return nil, nil, fmt.Errorf("serve: cannot listen on %s: %v; stop what listens there, or choose another address (--listen)", cfg.Listen, listenCause(err))
		}
		scheme := "http"
		if https {
			scheme = "https"
		}
		lns, base = append(lns, ln), append(base, scheme+"://"+ln.Addr().String())
	}
	if cfg.Socket != "" {
		ln, err := server.ListenSocket(cfg.Socket, cfg.SocketFileMode(), cfg.SocketGroup)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, nil, fmt.Errorf("serve: %v", err) // %v: see above
		}
		lns, base = append(lns, ln), append(base, "unix:"+cfg.Socket)
	}
	return lns, base, nil
}

// listenCause is what the system said of a failed listen, without Go's
// "listen tcp ADDR: bind:" prefix.
func listenCause(err error) error {
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err
	}
	return err
}

// Event streams look at the store's feed each time the database says a
// run has new events (PostgreSQL's NOTIFY), and at least this often
// (SQLite's poll; a safety net on PostgreSQL).
const eventsPoll = 200 * time.Millisecond

// serveEvents returns the handler of the server's event streams: every
// stream waits on one Notifier, which holds the server's one wake-up on
// the events channel (the loop "events" of loops) until ctx ends.
func (a *app) serveEvents(ctx context.Context, ss store.ServerStore, loops *health.Loops) (func(http.ResponseWriter, *http.Request, store.FeedFilter), *sse.Notifier, error) {
	wake, stopWake, err := a.wakeups(ctx, backend.ChannelEvents)
	if err != nil {
		return nil, nil, err
	}
	wake = loops.Watch("events", wake)
	n := sse.NewNotifier()
	go func() {
		defer stopWake()
		n.Run(ctx, sse.Wake(wake), eventsPoll)
	}()
	return sse.Handler(ss, n.Wait, sse.Options{}), n, nil
}

// servePool runs the engine's worker pool for queued, detached-decided
// and orphaned runs until the server stops; the channel is closed when
// it has. Its wait for work is the loop "work" of loops.
func (a *app) servePool(ctx context.Context, e *engine.Engine, cfg *server.Config, log *slog.Logger, loops *health.Loops) (<-chan struct{}, error) {
	wait, stopWait, err := a.wakeups(ctx, backend.ChannelWork)
	if err != nil {
		return nil, err
	}
	wait = loops.Watch("work", wait)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer stopWait()
		opts := engine.PoolOptions{Concurrency: cfg.Concurrency, Poll: time.Second, Log: log, Wait: wait}
		if _, err := e.Serve(ctx, opts); err != nil && ctx.Err() == nil {
			log.Error("worker pool stopped", "err", err.Error())
		}
	}()
	return done, nil
}

// watchReload reloads the specs on SIGHUP until the returned function is
// called.
func (a *app) watchReload(specs *server.Specs, log *slog.Logger) (unwatch func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hup:
				_ = specs.Load(log) // a broken reload is logged and keeps the old specs
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(hup); close(done) }
}

// writeAtomic writes a file whole or not at all: a reader never sees it
// half written.
func writeAtomic(path, text string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".ready-*")
	if err != nil {
		return fmt.Errorf("ready file: %w", err)
	}
	_, err = tmp.WriteString(text)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("ready file: %w", err)
	}
	return nil
}

// serveLog is the server's log on stderr: JSON lines for a collector;
// with --dev, text for the person at the terminal, beside the banner.
func (a *app) serveLog(dev bool) *slog.Logger {
	if dev {
		return slog.New(slog.NewTextHandler(a.stderr, nil))
	}
	return slog.New(slog.NewJSONHandler(a.stderr, nil))
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/backend"
	"github.com/agentctl/agentctl/engine/store/sqlstore"
	"github.com/agentctl/agentctl/internal/duration"
	"github.com/agentctl/agentctl/spec"
)

// Exit codes, documented in the root help and docs/commands.md.
const (
	exitOK        = 0 // completed, or the command succeeded
	exitError     = 1 // an error, or the run failed
	exitUsage     = 2 // bad usage, invalid spec or invalid input
	exitSuspended = 3 // the run waits for a human decision
	exitConflict  = 4 // already decided, not suspended, or another process won
	exitForbidden = 5 // the approver policy does not allow the decision
	exitDatabase  = 6 // the database is busy, unwritable, corrupt or newer
	exitStalled   = 7 // the run stalled: its model could not be asked; continue asks again
	exitUnknown   = 8 // the change's outcome is unknown: read the run before trying again
)

const rootHelp = `agentctl runs LLM agents declared in YAML, durably: a run that needs a
human stops with status suspended, and any process may later approve or
decline its pending tool calls.

Exit codes:
  0  completed, or the command succeeded
  1  error, or the run failed; or the command was stopped (Ctrl-C,
     SIGTERM) between two steps, the run checkpointed: agentctl
     continue RUN goes on (a tool killed past --grace leaves the run
     suspended instead: exit 3)
  2  bad usage, invalid spec or invalid input (unknown run id included)
  3  the run is suspended, waiting for a human decision
  4  conflict: the call is already decided, the run is not suspended,
     or another process won the race
  5  forbidden: the approver policy does not allow this decision (not an
     approver, --as without being a delegate, the same approver twice,
     or the run's starter under separateDuties); the attempt is recorded
  6  the database cannot be used: locked by another process beyond the
     busy timeout, unwritable, corrupt, from a newer agentctl, or its
     server cannot be reached or refuses the connection (authentication,
     TLS, privileges); nothing was changed (agentctl doctor checks a
     database)
  7  the run stalled: its model could not be asked (provider down, key
     missing) after the run began; every result is kept, and
     agentctl continue RUN asks the model again
  8  the outcome is unknown: the connection to the database or server
     broke after the change was sent, and it may or may not have been
     made; read the run (agentctl show RUN) before trying again

The database is --db, else $AGENTCTL_DB, else
$XDG_STATE_HOME/agentctl/agentctl.db (~/.local/state/agentctl/agentctl.db):
a SQLite file, or for a database a team shares a postgres:// (or
postgresql://) URL or PostgreSQL key=value settings ("host=db dbname=ops
user=bob"). Any other URL scheme, or unknown settings, is refused (exit 2).
A write waits up to $AGENTCTL_BUSY_TIMEOUT (default 10s) for another
process's transaction.

Through a server instead (agentctl serve, which owns the database and
enforces who may do what): --server URL|unix:PATH, else $AGENTCTL_SERVER
(--db beats $AGENTCTL_SERVER; --server and --db exclude each other). Over
https:// (http:// on loopback only) $AGENTCTL_TOKEN is sent as a bearer
token; on a unix: socket the kernel says who you are and no token is
sent. run, list, show, approve, decline, resume, retry, resolve,
continue, send and events print and exit as against a database; a server
that cannot be reached exits 6.`

// app is one invocation's state, shared by its subcommands.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	dbPath         string
	dbOpts         backend.Options // how the command opens the database: only to read, for list, show, ...
	db             *sqlstore.DB
	// stop is closed on SIGTERM or Ctrl-C; the engines then stop
	// gracefully, and the context ends grace later (watchSignals).
	stop  chan struct{}
	grace time.Duration // --grace
	// mu guards engines and, once an engine is added, grace.
	mu      sync.Mutex
	engines []*engine.Engine
	limits  limits // read before any command runs
	server  string // --server
	// hintFlags is the --server or --db of the command line, as the
	// hints it prints repeat it (hintCmd).
	hintFlags string
	remote    *client.Client // the server the command goes through, if any (connect)
	// cmdPath names the command that ran ("agentctl approve"), for the
	// usage hint; errJSON is set when it was given -o json: its error is
	// then printed as the API's error object.
	cmdPath string
	errJSON bool
	// tracing is the OpenTelemetry tracer of the engines the command
	// makes, set up on first use (tracing.go).
	tracing tracer
	noColor bool // --no-color
}

// Main runs agentctl with os.Args and returns the exit code.
func Main() int {
	gcForShortCommand()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	a := &app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, stop: make(chan struct{})}
	defer a.close()
	defer a.watchSignals(cancel)()
	root := a.rootCmd()
	root.SetArgs(os.Args[1:])
	cmd, err := root.ExecuteContextC(ctx)
	if cmd != nil {
		a.notifyOnce(ctx, cmd.Name())
		a.noteCmd(cmd)
	}
	a.stopTracing() // what the command traced is exported before it exits
	return a.report(err)
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "agentctl",
		Short:         "Declarative LLM agents with durable human approval",
		Long:          rootHelp,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          argsCheck(cobra.NoArgs),
		RunE:          func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return cmdUsageErr(cmd, err) })
	a.grace = defaultGrace
	root.PersistentFlags().Var(duration.Value{D: &a.grace}, "grace", "on SIGTERM or Ctrl-C, how long the tool in flight may finish before it is killed (its call is then recorded interrupted)")
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) (err error) {
		a.noteCmd(cmd)
		if colorful(a.stdout, a.noColor) {
			a.stdout = painted{a.stdout}
			cmd.SetOut(a.stdout)
		}
		if a.limits, err = readLimits(); err != nil {
			return err
		}
		if err := a.connect(cmd); err != nil {
			return err
		}
		return a.checkGrace(cmd, args)
	}
	root.PersistentFlags().BoolVar(&a.noColor, "no-color", false, "no colour on a terminal (as NO_COLOR does)")
	root.PersistentFlags().StringVar(&a.server, "server", "", "go through agentctl serve at `URL|unix:PATH` instead of a database (default $AGENTCTL_SERVER; token $AGENTCTL_TOKEN)")
	root.PersistentFlags().StringVar(&a.dbPath, "db", "", "database: a SQLite file, a postgres:// URL or PostgreSQL key=value settings (default $AGENTCTL_DB, else a file under $XDG_STATE_HOME)")
	root.AddCommand(
		a.validateCmd(),
		remoteOK(a.runCmd()),
		remoteOK(a.listCmd()),
		remoteOK(a.showCmd()),
		remoteOK(a.approveCmd()),
		remoteOK(a.declineCmd()),
		remoteOK(a.resumeCmd()),
		remoteOK(a.sendCmd()),
		a.expireCmd(),
		remoteOK(a.eventsCmd()),
		remoteOK(a.continueCmd()),
		remoteOK(a.retryCmd()),
		remoteOK(a.resolveCmd()),
		a.graphCmd(),
		a.testCmd(),
		a.schemaCmd(),
		a.doctorCmd(),
		a.workerCmd(),
		a.statusCmd(),
		a.migrateCmd(),
		a.tokenCmd(),
		a.serveCmd(),
		a.notificationsCmd(),
		a.versionCmd(),
		a.manCmd(),
		a.auditCmd(),
		a.pruneCmd(),
		a.policyCmd(),
	)
	root.Version = versionOf().Version
	root.SetVersionTemplate("agentctl {{.Version}}\n")
	a.completions(root)
	return root
}

// exitErr ends the command with a code; a nil err prints nothing more.
type exitErr struct {
	code int
	err  error
	cmd  *cobra.Command // for a usage error, the command misused, when known
	// env: the mistake is not in the command line (the environment, a
	// file, a spec, data, the terminal): no usage hint (inputErr).
	env bool
}

func (e *exitErr) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitErr) Unwrap() error { return e.err }

func usageErr(err error) error { return &exitErr{code: exitUsage, err: err} }

// inputErr exits 2 for a mistake that is not in how the command was
// used: an environment variable, a file, a spec, data, the terminal. No
// usage hint follows it: the command's help would not fix it.
func inputErr(err error) error { return &exitErr{code: exitUsage, err: err, env: true} }

// cmdUsageErr is a usage error of cmd, whose help its hint names.
func cmdUsageErr(cmd *cobra.Command, err error) error {
	return &exitErr{code: exitUsage, err: err, cmd: cmd}
}

// report prints err, if any, and maps it to an exit code: as text, or
// under -o json as the server API's error object.
func (a *app) report(err error) int {
	if err == nil {
		return exitOK
	}
	if a.db != nil {
		err = a.db.Classify(err)
	}
	if code, ok := a.stopped(err); ok {
		return code
	}
	code := exitCode(err)
	if ee := (*exitErr)(nil); errors.As(err, &ee) && ee.cmd != nil {
		a.noteCmd(ee.cmd) // arguments are checked before any hook runs
	}
	if a.errJSON {
		if obj, ok := a.errorObject(err, code); ok {
			writeJSON(a.stderr, api.ErrorBody{Error: obj})
		}
		return code
	}
	var ee *exitErr
	var se spec.Errors
	var amb *store.AmbiguousError
	switch {
	case errors.As(err, &ee):
		if ee.err != nil {
			fmt.Fprintf(a.stderr, "agentctl: %v\n", ee.err)
		}
		if ee.code == exitUsage && ee.err != nil && !ee.env {
			fmt.Fprintln(a.stderr, a.usageHint())
		}
	case errors.As(err, &se):
		fmt.Fprintln(a.stderr, se.Error())
		fmt.Fprintf(a.stderr, "agentctl: %s\n", specInvalid(se))
	case errors.As(err, &amb):
		fmt.Fprintf(a.stderr, "agentctl: %v; use a longer prefix. Matches:\n", amb)
		for _, m := range amb.Matches {
			fmt.Fprintf(a.stderr, "  %s\n", m)
		}
	default:
		// The commands a phrase names run as printed: with --db or --server.
		fmt.Fprintf(a.stderr, "agentctl: %s\n", strings.ReplaceAll(phrase(err), "with agentctl continue ", "with "+a.hintCmd()+" continue "))
		if line := a.rightCommand(err); line != "" {
			fmt.Fprintf(a.stderr, "agentctl: %s\n", line)
		}
		if ace := (*engine.AfterCommitError)(nil); errors.As(err, &ace) {
			fmt.Fprintf(a.stderr, "agentctl: once that is fixed, %s continue %s takes the run on; a call whose result was not stored is then reported interrupted, for retry or resolve\n", a.hintCmd(), ace.RunID)
		}
	}
	return code
}

// noteCmd records the command that runs, for its errors: the usage
// hint names its help, and with -o json they print as JSON.
func (a *app) noteCmd(cmd *cobra.Command) {
	a.cmdPath = cmd.CommandPath()
	if f := cmd.Flags().Lookup("output"); f != nil && f.Value.Type() == "text|json" && f.Value.String() == "json" {
		a.errJSON = true
	}
}

// usageHint names the help of the command that ran.
func (a *app) usageHint() string {
	path := a.cmdPath
	if path == "" {
		path = "agentctl"
	}
	return fmt.Sprintf("Run '%s --help' for usage.", path)
}

func specInvalid(se spec.Errors) string {
	return fmt.Sprintf("spec is invalid (%d %s)", len(se), plural(len(se), "error", "errors"))
}

// exitCode classifies err into the command's exit code.
func exitCode(err error) int {
	var ee *exitErr
	var se spec.Errors
	var amb *store.AmbiguousError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &se), errors.As(err, &amb):
		return exitUsage
	case errors.As(err, new(*engine.AfterCommitError)):
		return exitError // the decision stands: not "nothing was changed"
	case errors.Is(err, store.ErrOutcomeUnknown):
		return exitUnknown
	case errors.Is(err, store.ErrUnavailable):
		return exitDatabase
	case errors.Is(err, store.ErrForbidden):
		return exitForbidden
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrLeaseLost):
		return exitConflict
	case errors.Is(err, store.ErrNotFound), errors.Is(err, engine.ErrUsage):
		return exitUsage
	}
	return exitError
}

// apiCodes names, as the server's API does, the error of each exit code
// (docs/server.md); not_found and too_large are told apart by the error.
var apiCodes = map[int]string{
	exitUsage:     api.CodeInvalid,
	exitConflict:  api.CodeConflict,
	exitForbidden: api.CodeForbidden,
	exitDatabase:  api.CodeUnavailable,
	exitUnknown:   api.CodeOutcomeUnknown,
}

// errorObject is err as the server's API reports it, with code its exit
// code; false when err prints nothing (an exit code alone).
func (a *app) errorObject(err error, code int) (api.Error, bool) {
	var (
		ee  *exitErr
		se  spec.Errors
		amb *store.AmbiguousError
		in  *engine.InputError
	)
	e := api.Error{Code: apiCodes[code]}
	switch {
	case e.Code == "":
		e.Code = "internal"
	case errors.Is(err, errTooLarge), errors.Is(err, spec.ErrTooLarge):
		e.Code = api.CodeTooLarge
	case errors.Is(err, store.ErrNotFound):
		e.Code = api.CodeNotFound
	}
	switch {
	case errors.As(err, &se):
		e.Message = specInvalid(se)
		for _, x := range se {
			e.Details = append(e.Details, api.Detail{Message: x.Error()})
		}
	case errors.As(err, &ee):
		if ee.err == nil {
			return e, false
		}
		e.Message = ee.err.Error()
		if ee.code == exitUsage && !ee.env {
			e.Hint = a.usageHint()
		}
	case errors.As(err, &amb):
		e.Message, e.Hint = amb.Error(), "use a longer prefix"
		e.Details = []api.Detail{{Message: "the prefix matches several runs", Matches: amb.Matches}}
	case errors.As(err, &in) && in.Violations != nil:
		e.Message = strings.SplitN(phrase(err), ":\n", 2)[0]
		for _, v := range in.Violations {
			e.Details = append(e.Details, api.Detail{Pointer: v.Pointer, Message: v.Message})
		}
	default:
		e.Message = phrase(err)
	}
	return e, true
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// store opens the database on first use, as the command asks (dbOpts).
func (a *app) store(ctx context.Context) (*sqlstore.DB, error) {
	if a.db != nil {
		return a.db, nil
	}
	db, err := openDB(ctx, a.dbPath, a.dbOpts)
	if err != nil {
		return nil, err
	}
	a.db = db
	return db, nil
}

// openDB opens the database --db (or $AGENTCTL_DB, ...) names: a
// postgres:// URL, else a SQLite file.
func openDB(ctx context.Context, flag string, opts backend.Options) (*sqlstore.DB, error) {
	path, err := dbPath(flag)
	if err != nil {
		return nil, err
	}
	if opts.BusyTimeout, err = busyTimeout(); err != nil {
		return nil, err
	}
	// A string that looks like a URL of another scheme, or like settings
	// PostgreSQL does not know, is a mistake: it makes no file.
	if err := backend.Check(path); err != nil {
		return nil, inputErr(err)
	}
	// A new SQLite file named by --db or $AGENTCTL_DB goes in a directory
	// that exists: a typo creates nothing. Only the default location is
	// made.
	if named := flag != "" || os.Getenv("AGENTCTL_DB") != ""; named && !opts.ReadOnly && !opts.Inspect && !backend.IsPostgres(path) {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
				return nil, fmt.Errorf("open database %s: %w: directory %s does not exist; create it first (agentctl makes directories only for its default database)",
					path, store.ErrCannotWrite, filepath.Dir(path))
			}
		}
	}
	return backend.Open(ctx, path, opts)
}

// engine opens the store and returns an engine with the default models.
func (a *app) engine(ctx context.Context) (*engine.Engine, error) {
	return a.engineFor(ctx, &runFlags{})
}

func (a *app) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, e := range a.engines {
		e.Close() // stops MCP servers
	}
	if a.db != nil {
		a.db.Close()
	}
}

// wakeups returns a function that blocks until a notification on channel
// arrives (PostgreSQL's LISTEN) or d passes; on SQLite it waits d.
func (a *app) wakeups(ctx context.Context, channel string) (backend.Wakeup, func(), error) {
	path, err := dbPath(a.dbPath)
	if err != nil {
		return nil, nil, err
	}
	return backend.Wakeups(ctx, path, channel)
}

// busyTimeout reads $AGENTCTL_BUSY_TIMEOUT; 0 means the store's default.
func busyTimeout() (time.Duration, error) {
	v := os.Getenv("AGENTCTL_BUSY_TIMEOUT")
	if v == "" {
		return 0, nil
	}
	d, err := duration.Parse(v)
	if err != nil || d <= 0 {
		return 0, inputErr(fmt.Errorf("AGENTCTL_BUSY_TIMEOUT=%q: want a duration such as 30s or 2m", v))
	}
	return d, nil
}

// dbPath resolves the database path: flag, $AGENTCTL_DB, then the XDG
// state directory.
func dbPath(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if p := os.Getenv("AGENTCTL_DB"); p != "" {
		return p, nil
	}
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no database path: set --db or AGENTCTL_DB (%w)", err)
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "agentctl", "agentctl.db"), nil
}

// osUser names the OS user running this process.
func osUser() string {
	// The identity comes from the kernel (the real uid) only: nothing in
	// the environment can change it.
	if u, err := user.LookupId(strconv.Itoa(os.Getuid())); err == nil && u.Username != "" {
		return u.Username
	}
	return fmt.Sprintf("uid:%d", os.Getuid())
}

// argsCheck wraps a cobra positional-argument check so that its failure
// is a usage error.
func argsCheck(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return cmdUsageErr(cmd, err)
		}
		return nil
	}
}

// needsOne requires a command's one argument, what ("a run id"), and
// says what is missing in agentctl's words, with the command's usage.
func needsOne(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) == 0:
			return cmdUsageErr(cmd, fmt.Errorf("%s needs %s: %s", cmd.Name(), what, usageLine(cmd)))
		case len(args) > 1:
			return cmdUsageErr(cmd, fmt.Errorf("%s takes one %s, not %d arguments (%s): %s",
				cmd.Name(), strings.TrimPrefix(strings.TrimPrefix(what, "an "), "a "), len(args), quoteArgs(args), usageLine(cmd)))
		}
		return nil
	}
}

// quoteArgs quotes each argument, for an error that lists them.
func quoteArgs(args []string) string {
	quoted := make([]string, len(args))
	for i, x := range args {
		quoted[i] = strconv.Quote(x)
	}
	return strings.Join(quoted, ", ")
}

// usageLine is a command's usage as its help shows it.
func usageLine(cmd *cobra.Command) string {
	return cmd.CommandPath() + strings.TrimPrefix(cmd.Use, cmd.Name())
}
